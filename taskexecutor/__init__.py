"""What runs in each container: the slot table, tasks in threads, result partitions and
input gates (the data plane), and the operators tasks run."""
