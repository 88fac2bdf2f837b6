"""`python -m tests.fake_kube` serves until killed and writes a usable kubeconfig."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]


def test_cli_writes_a_kubeconfig_and_stops_on_sigterm(tmp_path):
    kubeconfig = tmp_path / "kube.yaml"
    process = subprocess.Popen([sys.executable, "-m", "tests.fake_kube", "--port", "0", "--kubeconfig",
                                str(kubeconfig), "--nodes", "1", "--gpu-nodes", "1", "--fault-rate", "0",
                                "--seed", "1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert kubeconfig.exists(), process.stderr.read1().decode() if process.poll() is not None else "no file"
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        api = config.new_client_from_config(str(kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        assert sorted(n.metadata.name for n in nodes) == ["gpu-node-0", "node-0"]
        assert nodes[0].status.allocatable["nvidia.com/gpu"] == "4"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
