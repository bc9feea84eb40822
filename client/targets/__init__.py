"""Deployment targets: where a JobGraph runs."""
