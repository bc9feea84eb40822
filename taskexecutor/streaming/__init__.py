"""What runs an unbounded job's subtask: the stream task's loop (its mailbox), barrier
alignment over its input channels, the state backend its operators keep state in, and
its snapshots."""
