"""Session mode's Dispatcher (FLIP-6): accepts jobs, runs a JobMaster for each on the
session's shared ResourceManager, and keeps every finished job queryable."""
from yarnflow.core.history import JobArchive
from yarnflow.appmaster.dispatcher.dispatcher import Dispatcher
from yarnflow.appmaster.dispatcher.gateway import DispatcherGateway

__all__ = ["Dispatcher", "DispatcherGateway", "JobArchive"]
