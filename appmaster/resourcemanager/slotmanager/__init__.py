"""The slot manager: matches slot requests to free slots, or to workers still to start."""
from yarnflow.appmaster.resourcemanager.slotmanager.slot_manager import (
    SlotManager, SlotManagerActions, SlotRequest, SlotState)

__all__ = ["SlotManager", "SlotManagerActions", "SlotRequest", "SlotState"]
