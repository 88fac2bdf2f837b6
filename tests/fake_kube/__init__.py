"""A fake Kubernetes API server for Dockyard's tests: real HTTP on loopback, real-server semantics."""
from .auth import Rule
from .server import ADMIN_TOKEN, RESTRICTED_TOKEN, FakeKube
from .simulation.kubelet import PodPlan

__all__ = ["ADMIN_TOKEN", "RESTRICTED_TOKEN", "FakeKube", "PodPlan", "Rule"]
