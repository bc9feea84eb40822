"""Where gRPC's C core writes its own lines, refused TLS handshakes above all: to the
process's stderr, beneath Python's logging, from the moment grpc is imported.

A runtime process's stderr is its log (the container's, or a local executor's log
file), where a refused handshake is evidence worth keeping. On a user's terminal the
same lines are noise: the client already reports a connection it could not make in
one line. So importing ``yarnflow.client`` quiets the core to errors, unless the user
chose a verbosity, and a runtime process undoes that for itself before it imports grpc.

It is process configuration, through the environment (gRPC reads ``GRPC_VERBOSITY``
once, when it loads), so it lives with the configuration and imports nothing."""
from __future__ import annotations

import os

_QUIETED = "YARNFLOW_QUIETED_GRPC"


def quiet_grpc_core() -> None:
    if "GRPC_VERBOSITY" not in os.environ:
        os.environ["GRPC_VERBOSITY"] = "ERROR"
        os.environ[_QUIETED] = "1"


def grpc_core_logs_to_stderr() -> None:
    """gRPC's own default again, in this process and those it starts, unless the user
    chose a verbosity."""
    if os.environ.pop(_QUIETED, None):
        os.environ.pop("GRPC_VERBOSITY", None)
