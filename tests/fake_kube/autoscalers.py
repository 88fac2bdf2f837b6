"""FakeKube's node autoscalers: install Karpenter or Cluster API (their CRDs and a controller that plays them), and
make a cloud refuse launches."""
from __future__ import annotations

from .catalog_cluster_api import machinedeployment_crd
from .catalog_karpenter import nodeclaim_crd, nodepool_crd


class AutoscalerControls:
    """Mixed into FakeKube: `install_karpenter`, `install_cluster_api`, `fail_launches`, `mend_launches`."""

    def install_karpenter(self, instance_types: dict | None = None, launch_seconds: float = 30.0) -> None:
        """Install nodepools/nodeclaims.karpenter.sh (v1) and run a Karpenter-like controller on the fake clock.

        `instance_types`: {name: InstanceType} (simulation.instancetypes; default: a few Azure sizes); a NodeClaim's
        Node registers `launch_seconds` after the NodeClaim is created.
        """
        for crd in (nodepool_crd(), nodeclaim_crd()):
            self.create(crd)
        self.sim.karpenter.enable(instance_types, launch_seconds)
        self.advance(self.settings.crd_establish_delay)

    def install_cluster_api(self, launch_seconds: float = 30.0) -> None:
        """Install machinedeployments.cluster.x-k8s.io (v1beta2, as Cluster API v1.14 stores it) and run a
        cluster-autoscaler-like controller (and the MachineDeployment controller) on the fake clock."""
        self.create(machinedeployment_crd())
        self.sim.cluster_api.enable(launch_seconds)
        self.advance(self.settings.crd_establish_delay)

    def fail_launches(self, pool: str | None = None, reason: str = "InsufficientCapacity",
                      message: str | None = None) -> None:
        """Make the cloud refuse new nodes (of one NodePool / MachineDeployment, or all) until `mend_launches()`."""
        self.sim.karpenter.failures[pool] = (reason, message)
        self.sim.cluster_api.failures[pool] = (reason, message)
        self.after_write()

    def mend_launches(self) -> None:
        """Let launches succeed again."""
        self.sim.karpenter.failures.clear()
        self.sim.cluster_api.failures.clear()
        self.after_write()
