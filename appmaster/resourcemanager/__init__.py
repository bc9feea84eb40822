"""The ResourceManager: TaskExecutors and their slots, pending slot requests, and the
resource driver that brings workers into being and stops them."""
