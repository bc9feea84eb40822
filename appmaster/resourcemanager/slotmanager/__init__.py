"""The slot manager: matches slot requests to free slots, or to workers still to start."""
from yarnflow.appmaster.resourcemanager.slotmanager.slot_manager import (
    PendingSlotRequest, RequestState, SlotManager, SlotManagerActions)
from yarnflow.appmaster.resourcemanager.slotmanager.slots import SlotState

__all__ = ["RequestState", "SlotManager", "SlotManagerActions", "PendingSlotRequest", "SlotState"]
