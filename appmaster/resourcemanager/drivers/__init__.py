"""Resource drivers: how workers (TaskExecutors in containers or processes) start and stop."""
from yarnflow.appmaster.resourcemanager.drivers.base import ResourceDriver, WorkerEvents

__all__ = ["ResourceDriver", "WorkerEvents"]
