"""tests.fake_kube's FakeKube serving in a process of its own: its cost stays out of the benchmark's process."""
import os
import signal
import sys
from pathlib import Path

import yaml

from bench.support.processes import spawn, stop, wait_for

FAKE_SERVER = r"""
import signal, sys, threading
from tests.fake_kube.server import FakeKube

kubeconfig, pods, job_seconds, tick = sys.argv[1], sys.argv[2] == "pods", float(sys.argv[3]), float(sys.argv[4])
# Controllers (Job → pods, scheduler, kubelet) off unless asked: they run in the API server's process and GIL here,
# O(objects) per pass, and would be most of what is measured. Roomy nodes, so pods (when on) never wait for room.
kube = FakeKube(nodes=0, auto=pods, reactive=False, tick=tick, job_pod_seconds=job_seconds)
for number in range(2):
    kube.add_node(f"node-{number}", cpu="1000", memory="10000Gi", pods=100000)
kube.start()
attached = threading.Event()  # until SIGUSR1 (the attach is done) controller passes run anyway: the CRD gets Established


def setup_passes():
    while not attached.wait(0.1) and not kube.store.view(("batch", "jobs")):  # never once Jobs arrive, signal or not
        kube.sim.run()
    print("controller passes stopped", flush=True)


if not pods:
    threading.Thread(target=setup_passes, daemon=True).start()
kube.write_kubeconfig(kubeconfig)
print(f"fake kube-apiserver listening on {kube.url}", flush=True)
done = threading.Event()
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda *_: done.set())
signal.signal(signal.SIGUSR1, lambda *_: attached.set())
done.wait()
kube.stop()
for error in kube.server_errors:
    print("fake server error:", error, flush=True)
"""


class Fake:
    """tests.fake_kube's FakeKube serving in its own process (started as `python -m tests.fake_kube` does, with the
    controllers off unless `pods`), and its kubeconfig."""

    count = 0

    def __init__(self, work: Path, pods: bool, job_seconds: float, tick: float):
        Fake.count += 1
        self.kubeconfig_path = work / f"fake-{Fake.count}.kubeconfig"
        self.log = work / f"fake-{Fake.count}.log"
        self.pods = pods
        mode = "pods" if pods else "api"
        self.process = spawn([sys.executable, "-c", FAKE_SERVER, str(self.kubeconfig_path), mode, str(job_seconds),
                              str(tick)], self.log)
        wait_for(lambda: "listening on" in self.log.read_text() or self.process.poll() is not None, 30, "the fake", 0.05)
        assert self.process.poll() is None, self.log.read_text()
        self.kubeconfig_yaml = self.kubeconfig_path.read_text()
        self.url = yaml.safe_load(self.kubeconfig_yaml)["clusters"][0]["cluster"]["server"]

    def attached(self) -> None:
        """The attachment is checked: no more controller passes (unless `pods`)."""
        os.kill(self.process.pid, signal.SIGUSR1)
        if not self.pods:
            wait_for(lambda: "controller passes stopped" in self.log.read_text(), 10, "the fake's controllers to stop", 0.05)

    def stop(self) -> None:
        stop(self.process)
        errors = self.log.read_text(errors="replace").count("fake server error:")
        assert not errors, f"the fake API server failed internally ({self.log}):\n" + self.log.read_text()[-3000:]
