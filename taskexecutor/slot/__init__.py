"""The slot table of a TaskExecutor."""
from yarnflow.taskexecutor.slot.table import SlotStateError, TaskSlot, TaskSlotState, TaskSlotTable

__all__ = ["TaskSlotTable", "TaskSlot", "TaskSlotState", "SlotStateError"]
