"""Where the client keeps what it needs to talk to an application it submitted: the
application's certificate and key (the only way into its mutual-TLS services) and
the job's id (per job: ``~/.yarnflow/applications/<app id>/``, readable by the owner
only); for a session also its name, Dispatcher address and history directory, and
for every job submitted to a session, which session took it (``jobs/<job id>``)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from yarnflow.core.ids import JobID
from yarnflow.rpc.security import TlsCredentials


def yarnflow_home() -> Path:
    """The user's yarnflow directory: ``$YARNFLOW_HOME``, else ``~/.yarnflow``."""
    return Path(os.environ.get("YARNFLOW_HOME", Path.home() / ".yarnflow"))


class ApplicationStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or yarnflow_home()

    def _dir(self, app_id: str) -> Path:
        return self.root / "applications" / app_id

    def save(self, app_id: str, tls: TlsCredentials, info: dict[str, Any]) -> None:
        tls.write(self._dir(app_id))
        _replace(self._dir(app_id) / "info.json", json.dumps(info))

    def credentials(self, app_id: str) -> TlsCredentials:
        path = self._dir(app_id)
        if not path.exists():
            raise KeyError(f"no credentials for {app_id} in {path.parent}: only the user who "
                           "submitted an application (from this account) can reach its services")
        return TlsCredentials.read(path)

    def info(self, app_id: str) -> dict[str, Any]:
        path = self._dir(app_id) / "info.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def update(self, app_id: str, **info: Any) -> None:
        _replace(self._dir(app_id) / "info.json", json.dumps({**self.info(app_id), **info}))

    def sessions(self) -> list[tuple[str, dict[str, Any]]]:
        """The sessions started from this account, newest first."""
        root = self.root / "applications"
        found = [(d.name, self.info(d.name)) for d in root.iterdir()] if root.is_dir() else []
        return sorted(((app_id, info) for app_id, info in found if info.get("kind") == "session"),
                      key=lambda item: item[1].get("submitted", 0), reverse=True)

    def remember_job(self, job_id: JobID, app_id: str) -> None:
        path = self.root / "jobs" / job_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(app_id)

    def app_of_job(self, job_id: JobID) -> str | None:
        path = self.root / "jobs" / job_id
        return path.read_text().strip() if path.exists() else None


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole, by a rename: several processes of one user read and update
    an application's info at once (an attached run and `yarnflow status` both learn a
    new ApplicationMaster attempt's address), and a file written in place is empty
    for a moment to a reader (which then failed with a raw JSONDecodeError)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    partial.write_text(text)
    os.replace(partial, path)
