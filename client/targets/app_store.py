"""Where the client keeps what it needs to talk to an application it submitted: the
application's certificate and key (the only way into its mutual-TLS services) and
the job's id. ``~/.yarnflow/applications/<app id>/``, readable by the owner only."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from yarnflow.rpc.security import TlsCredentials


class ApplicationStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or Path(os.environ.get("YARNFLOW_HOME", Path.home() / ".yarnflow"))

    def _dir(self, app_id: str) -> Path:
        return self.root / "applications" / app_id

    def save(self, app_id: str, tls: TlsCredentials, info: dict[str, Any]) -> None:
        tls.write(self._dir(app_id))
        (self._dir(app_id) / "info.json").write_text(json.dumps(info))

    def credentials(self, app_id: str) -> TlsCredentials:
        path = self._dir(app_id)
        if not path.exists():
            raise KeyError(f"no credentials for {app_id} in {path.parent}: only the user who "
                           "submitted an application (from this account) can reach its services")
        return TlsCredentials.read(path)

    def info(self, app_id: str) -> dict[str, Any]:
        path = self._dir(app_id) / "info.json"
        return json.loads(path.read_text()) if path.exists() else {}
