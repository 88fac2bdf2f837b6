"""Runners for targets that are not Kubernetes: processes on the worker's own host (`local`)."""
