"""``python -m yarnflow.appmaster``: the ApplicationMaster on YARN."""
from yarnflow.conf.logs import grpc_core_logs_to_stderr

grpc_core_logs_to_stderr()     # before grpc loads: this process's stderr is its log

from yarnflow.appmaster.yarn_entrypoint import main  # noqa: E402

raise SystemExit(main())
