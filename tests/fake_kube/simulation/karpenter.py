"""A Karpenter-like controller on the fake clock (filled in below)."""
from __future__ import annotations


class Karpenter:
    """Provisioning and disruption for NodePools (enabled by FakeKube.install_karpenter)."""

    def __init__(self, sim):
        self.sim = sim
        self.enabled = False
        self.instance_types: dict = {}
        self.launch_seconds = 30.0
        self.failures: dict = {}  # pool (None: every pool) -> (reason, message)

    def enable(self, instance_types: dict | None, launch_seconds: float) -> None:
        """Start acting on NodePools."""
        self.enabled, self.instance_types, self.launch_seconds = True, dict(instance_types or {}), launch_seconds

    def run(self) -> None:
        """One reconcile pass."""

    def next_due(self):
        """When a launch or a disruption is due."""
        return None
