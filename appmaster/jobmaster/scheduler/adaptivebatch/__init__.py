"""Adaptive batch execution (Flink's AdaptiveBatchScheduler): an operator after a
BLOCKING exchange gets its parallelism when what it reads has been written."""
