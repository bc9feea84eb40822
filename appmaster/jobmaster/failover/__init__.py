"""Task failure recovery (seed 003; Flink's flip1 package): a restart strategy decides
whether and when a job restarts after a failure, a failover strategy decides which
subtasks restart."""
from yarnflow.appmaster.jobmaster.failover.failover_strategy import (
    FailoverStrategy, RestartAll, RestartPipelinedRegion, failover_strategy)
from yarnflow.appmaster.jobmaster.failover.regions import PipelinedRegion, pipelined_regions
from yarnflow.appmaster.jobmaster.failover.restart_strategy import (
    ExponentialDelayRestart, FailureRateRestart, FixedDelayRestart, NoRestart, RestartStrategy,
    restart_strategy)

__all__ = ["FailoverStrategy", "RestartAll", "RestartPipelinedRegion", "failover_strategy",
           "PipelinedRegion", "pipelined_regions", "ExponentialDelayRestart",
           "FailureRateRestart", "FixedDelayRestart", "NoRestart", "RestartStrategy",
           "restart_strategy"]
