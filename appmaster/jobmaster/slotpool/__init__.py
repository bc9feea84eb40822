"""The SlotPool: the slots this job holds, and the requests it still waits on."""
from yarnflow.appmaster.jobmaster.slotpool.slots import PhysicalSlot, TaskExecutorLocation
from yarnflow.appmaster.jobmaster.slotpool.selection import SlotPreferences, select_slot
from yarnflow.appmaster.jobmaster.slotpool.slot_pool import NoResourceAvailableError, SlotPool

__all__ = ["PhysicalSlot", "TaskExecutorLocation", "SlotPreferences", "select_slot", "SlotPool",
           "NoResourceAvailableError"]
