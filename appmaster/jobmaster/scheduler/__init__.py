"""The scheduler: which subtasks run in which slots, and when they are deployed."""
