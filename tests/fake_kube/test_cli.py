"""`bin/fake-kube` (and `python -m tests.fake_kube`) serves until killed and writes a usable kubeconfig; its pods
say in their logs that nothing runs."""
import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml
from kubernetes import client, config

from tests.fake_kube.helpers import job_manifest

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


def test_bin_fake_kube_serves_the_version_in_the_environment_bin_run_builds(tmp_path):
    kubeconfig = tmp_path / "kube.yaml"
    # bin/fake-kube sets itself up (bin/setup requirements-dev.txt) only when the virtualenv lacks its packages;
    # here it has them, so it starts at once.
    process = subprocess.Popen([str(ROOT / "bin" / "fake-kube"), "--port", "0", "--kubeconfig", str(kubeconfig)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while not kubeconfig.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert kubeconfig.exists(), process.stderr.read().decode() if process.poll() is not None else "no file"
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{server}/version", timeout=5) as answer:
            assert answer.status == 200 and json.load(answer)["gitVersion"].startswith("v1.36")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    assert "listening on http://127.0.0.1:" in process.stdout.read().decode()


def test_a_simulated_pod_says_in_its_log_that_no_container_ran_and_what_would_have(fake_kube, kube_api):
    job = job_manifest("hello")
    job["spec"]["template"]["spec"]["containers"][0].update(command=["python", "train.py"], args=["--epochs", "2 3"])
    client.BatchV1Api(kube_api).create_namespaced_job("default", job)
    fake_kube.advance(1)
    (pod,) = fake_kube.list("pods", "default")
    log = client.CoreV1Api(kube_api).read_namespaced_pod_log(pod["metadata"]["name"], "default",
                                                            _preload_content=False).data.decode()
    assert log == "fake-kube: no container runs here; this pod would run: python train.py --epochs '2 3'\n"
