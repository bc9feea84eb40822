"""The JobMaster of one job: ExecutionGraph, scheduler, SlotPool, failure handling."""
