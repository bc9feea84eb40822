"""The slot manager: matches slot requests to free slots, or to workers still to start."""
from yarnflow.appmaster.resourcemanager.slotmanager.worker_spec import WorkerSpec
from yarnflow.appmaster.resourcemanager.slotmanager.container_ladder import (
    ContainerLadder, NoContainerFits, parse_container_sizes)
from yarnflow.appmaster.resourcemanager.slotmanager.slot_manager import (
    SlotManager, SlotManagerActions, SlotRequest, SlotState)

__all__ = ["WorkerSpec", "ContainerLadder", "NoContainerFits", "parse_container_sizes", "SlotManager", "SlotManagerActions", "SlotRequest", "SlotState"]
