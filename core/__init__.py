"""The model: what the client and the runtime share, importing neither of them.

The JobGraph and its enums, ResourceSpec, size estimates, ids and fencing tokens,
job and execution states, the worker-spec plan and container ladder both sides size
containers by, the naming contract inside a Skein application, the operators a
client builds and a task runs, and the file systems both read through (Flink keeps
the same things in flink-core). Imports point client -> model <- runtime; the wire
form of all this is ``yarnflow.rpc``.
"""
