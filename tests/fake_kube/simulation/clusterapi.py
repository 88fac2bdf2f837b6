"""A cluster-autoscaler-like controller for Cluster API MachineDeployments on the fake clock (filled in below)."""
from __future__ import annotations


class ClusterAutoscaler:
    """Scale MachineDeployments that carry the autoscaler's annotations (enabled by FakeKube.install_cluster_api)."""

    def __init__(self, sim):
        self.sim = sim
        self.enabled = False
        self.launch_seconds = 30.0
        self.failures: dict = {}

    def enable(self, launch_seconds: float) -> None:
        """Start acting on MachineDeployments."""
        self.enabled, self.launch_seconds = True, launch_seconds

    def run(self) -> None:
        """One reconcile pass."""

    def next_due(self):
        """When a launch or a scale-down is due."""
        return None
