"""What unbounded pipelines share between the client and the runtime: the elements that
travel in a stream beside its records (barriers, watermarks), key groups, event time,
windows, and the file sink's part files. The JobMaster's CheckpointCoordinator lives in
``appmaster/jobmaster/checkpoint/``; the stream task that runs them in
``taskexecutor/streaming/``."""
