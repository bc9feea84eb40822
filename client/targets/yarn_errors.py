"""The error of the YARN targets, importable without Skein installed."""


class YarnError(RuntimeError):
    """Something between the client and YARN failed; the message names the fix."""
