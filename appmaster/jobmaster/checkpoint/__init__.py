"""The JobMaster's second duty (seed 003): the checkpoint snapshot.

``coordinator.py`` triggers checkpoints and collects the tasks' acknowledgements
(Flink's ``CheckpointCoordinator``); ``pending.py`` is one checkpoint on its way;
``store.py`` keeps the completed ones on the cluster's file system (Flink's
``CompletedCheckpointStore``), where a new ApplicationMaster attempt finds them;
``failure_manager.py`` counts failures against the tolerable number; ``stats.py`` is
what the REST API and ``yarnflow status`` show.
"""
