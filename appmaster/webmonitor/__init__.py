"""The web monitor (Flink's WebMonitorEndpoint): a read-only REST API, the web page
drawn from it, and Prometheus metrics, served by the ApplicationMaster behind YARN's
tracking URL and by a ``local`` run that asks for it."""
from yarnflow.appmaster.webmonitor.server import WebMonitorServer
from yarnflow.appmaster.webmonitor.source import (ApplicationInfo, ApplicationMasterSource,
                                                  WebMonitorSource)

__all__ = ["ApplicationInfo", "ApplicationMasterSource", "WebMonitorServer", "WebMonitorSource"]
