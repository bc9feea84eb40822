"""The data plane: result partitions a task writes, input gates a task reads, and the
Arrow Flight server that serves partitions to other TaskExecutors."""
