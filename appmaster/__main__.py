"""``python -m yarnflow.appmaster``: the ApplicationMaster on YARN."""
from yarnflow.appmaster.yarn_entrypoint import main

raise SystemExit(main())
