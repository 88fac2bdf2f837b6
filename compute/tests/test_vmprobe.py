"""The probe of an attached host: its output parsed as the status shows it (pure), and the script run by a real sh."""
import subprocess

import pytest

from compute.hostkeys import FINGERPRINT, fingerprint
from compute.vmprobe import GPU_MARKER, parse_gpu, parse_probe, probe_script

PLAIN = """os=Ubuntu 22.04.4 LTS
kernel=5.15.0-105-generic
arch=x86_64
cpus=16
memory_kb=65838484
disk_total_kb=507930624
disk_free_kb=401251328
docker=Docker version 27.3.1, build ce12230
pid1=systemd
--- gpus
"""
TWO_GPUS = PLAIN + ("0, NVIDIA A100-SXM4-80GB, 81920, GPU-8f6b2c1e-1111-2222-3333-444455556666, 550.54.15\n"
                    "1, NVIDIA A100-SXM4-80GB, 81920, GPU-9a7c3d2f-1111-2222-3333-444455556666, 550.54.15\n")


def test_a_host_without_nvidia_smi_has_no_gpus_and_every_other_figure():
    assert parse_probe(PLAIN) == {
        "os": "Ubuntu 22.04.4 LTS", "kernel": "5.15.0-105-generic", "arch": "x86_64", "cpus": 16, "memory_mb": 64295,
        "disk_total_mb": 496026, "disk_free_mb": 391847, "docker": "27.3.1", "systemd": True, "gpus": [],
    }


def test_two_gpus_are_read_with_their_memory_uuid_and_driver():
    gpus = parse_probe(TWO_GPUS)["gpus"]
    assert [(gpu["index"], gpu["name"], gpu["memory_mb"], gpu["driver_version"]) for gpu in gpus] == [
        (0, "NVIDIA A100-SXM4-80GB", 81920, "550.54.15"), (1, "NVIDIA A100-SXM4-80GB", 81920, "550.54.15")]
    assert gpus[1]["uuid"] == "GPU-9a7c3d2f-1111-2222-3333-444455556666"


@pytest.mark.parametrize("row, expected", [
    ("0, Tesla T4, 15360, GPU-1, 535.1", {"index": 0, "name": "Tesla T4", "memory_mb": 15360, "uuid": "GPU-1",
                                          "driver_version": "535.1"}),
    ("3, Some, Board, 8192, GPU-2, 1.0", {"index": 3, "name": "Some, Board", "memory_mb": 8192, "uuid": "GPU-2",
                                          "driver_version": "1.0"}),  # a comma in the name
    ("1, H100, [N/A], GPU-3, 550", {"index": 1, "name": "H100", "memory_mb": None, "uuid": "GPU-3", "driver_version": "550"}),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", None),
    ("x, H100, 1, GPU-4, 550", None),
    ("", None),
])
def test_gpu_rows(row, expected):
    assert parse_gpu(row) == expected


@pytest.mark.parametrize("text, key, expected", [
    ("cpus=\n", "cpus", None),  # nproc missing and getconf too
    ("cpus=-4\n", "cpus", None),
    ("cpus=1e400\n", "cpus", None),
    ("memory_kb=lots\n", "memory_mb", None),
    ("memory_kb=" + "9" * 400 + "\n", "memory_mb", None),
    ("cpus=８\n", "cpus", None),  # a digit, but not an ASCII one
    ("cpus=16.0\n", "cpus", 16),
    ("docker=\n", "docker", None),
    ("docker=podman version 4.9.3\n", "docker", "podman version 4.9.3"),  # a docker that is something else: said as is
    ("pid1=init\n", "systemd", False),
    ("os=" + "x" * 1000 + "\n", "os", "x" * 200),
    ("os=Debian\x00 12 \udcff\n", "os", "Debian 12 \udcff"),
    ("", "gpus", []),
])
def test_what_does_not_read_is_none_and_text_is_cut(text, key, expected):
    assert parse_probe(text)[key] == expected


def test_odd_bytes_and_noise_do_not_break_the_parse():
    raw = b"os=Deb\xff\xfeian\nWelcome to the host!\n\x1b[31mmotd\x1b[0m\ncpus=4\n" + GPU_MARKER.encode() + b"\n\xff\xff\n"
    probes = parse_probe(raw.decode("utf-8", errors="replace"))
    assert probes["cpus"] == 4 and probes["os"] == "Deb\ufffd\ufffdian" and probes["gpus"] == []


def test_the_first_value_of_a_key_counts_and_lines_after_the_marker_are_gpus_only():
    probes = parse_probe("cpus=2\ncpus=64\n--- gpus\ncpus=128\n")
    assert probes["cpus"] == 2 and probes["gpus"] == []


def test_the_script_runs_in_sh_here_and_reads_this_machine(tmp_path):
    done = subprocess.run(["sh", "-c", probe_script("no/such/folder")], capture_output=True, text=True,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    probes = parse_probe(done.stdout)
    nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    assert probes["cpus"] == nproc and probes["memory_mb"] > 0 and probes["disk_total_mb"] > 0
    assert probes["arch"] and probes["kernel"] and probes["gpus"] == []


def test_a_quoted_jobs_folder_cannot_break_out_of_the_script(tmp_path):
    marker = tmp_path / "ran"
    script = probe_script(f"x'; touch {marker}; '")
    subprocess.run(["sh", "-c", script], capture_output=True, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa", "rsa"])
def test_fingerprints_are_the_ones_ssh_keygen_prints(tmp_path, kind):
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(tmp_path / "key")], check=True)
    printed = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "key.pub")], capture_output=True, text=True).stdout
    line = (tmp_path / "key.pub").read_text()
    assert fingerprint(line) == printed.split()[1] and FINGERPRINT.match(fingerprint(line))


@pytest.mark.parametrize("line", ["ssh-ed25519 not-base64!!", "ssh-ed25519", ""])
def test_a_key_line_that_does_not_read_still_has_a_fingerprint_of_that_form(line):
    assert FINGERPRINT.match(fingerprint(line))
