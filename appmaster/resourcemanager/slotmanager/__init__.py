"""The slot manager: matches slot requests to free slots, or to workers still to start."""
from yarnflow.appmaster.resourcemanager.slotmanager.slot_manager import (
    RequestState, SlotManager, SlotManagerActions, SlotRequest)
from yarnflow.appmaster.resourcemanager.slotmanager.slots import SlotState

__all__ = ["RequestState", "SlotManager", "SlotManagerActions", "SlotRequest", "SlotState"]
