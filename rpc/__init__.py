"""The wire contract (``proto/`` and the stubs generated from it) and what every
component needs to speak it: mutual-TLS servers and channels, fencing tokens, and
the single main thread each component runs its state on."""
