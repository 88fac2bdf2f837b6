"""The `docker run` / `docker stop` command lines of a container job on an attached VM (pure)."""
import shlex

import pytest

from compute.runners.docker_run import docker_run_argv, docker_stop_argv, shell_join

DIR = "/home/azureuser/.dockyard/jobs/7-5f1a2b3c4d5e6"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
DIGEST = "mcr.microsoft.com/azureml/curated/acpt@sha256:" + "0123456789abcdef" * 4
HEAD = ["docker", "run", "--rm", "--name", "dockyard-job-7-5f1a2b3c4d5e6", "--label", "dockyard.dev/job=7-5f1a2b3c4d5e6",
        "--init", "-v", f"{DIR}/workdir:/workdir", "-v", f"{DIR}/inputs:{DIR}/inputs:ro", "-w", "/workdir",
        "-e", "AZUREML_RUN_ID", "-e", "CUDA_VISIBLE_DEVICES"]
TRICKY = "echo \"it's done\"\nprintf '%s\\n' $HOME; python -c 'print(1)'"


def argv(**changes) -> list[str]:
    given = dict(key="7-5f1a2b3c4d5e6", folder=DIR, image=IMAGE, command="python train.py",
                 env_names=["AZUREML_RUN_ID", "CUDA_VISIBLE_DEVICES"], gpus=[], shm_size=None, cpus=None, memory_mb=None)
    return docker_run_argv(**{**given, **changes})


@pytest.mark.parametrize("changes, middle, tail", [
    pytest.param({}, [], [IMAGE, "/bin/sh", "-c", "python train.py"], id="no GPUs"),
    pytest.param({"gpus": [1]}, ["--gpus", '"device=1"'], [IMAGE, "/bin/sh", "-c", "python train.py"], id="one GPU"),
    pytest.param({"gpus": [0, 1]}, ["--gpus", '"device=0,1"'], [IMAGE, "/bin/sh", "-c", "python train.py"],
                 id="two GPUs"),
    pytest.param({"shm_size": "8g"}, ["--shm-size", "8g"], [IMAGE, "/bin/sh", "-c", "python train.py"], id="shm size"),
    pytest.param({"cpus": 4, "memory_mb": 14336}, ["--cpus", "4", "--memory", "14336m"],
                 [IMAGE, "/bin/sh", "-c", "python train.py"], id="cpus and memory"),
    pytest.param({"cpus": 1.5}, ["--cpus", "1.5"], [IMAGE, "/bin/sh", "-c", "python train.py"], id="fractional cpus"),
    pytest.param({"gpus": [2, 3], "shm_size": "2g", "cpus": 12, "memory_mb": 114688},
                 ["--gpus", '"device=2,3"', "--shm-size", "2g", "--cpus", "12", "--memory", "114688m"],
                 [IMAGE, "/bin/sh", "-c", "python train.py"], id="everything, in order"),
    pytest.param({"image": DIGEST}, [], [DIGEST, "/bin/sh", "-c", "python train.py"], id="image by digest"),
    pytest.param({"command": TRICKY}, [], [IMAGE, "/bin/sh", "-c", TRICKY], id="quotes and newlines"),
])
def test_docker_run_argv(changes, middle, tail):
    assert argv(**changes) == HEAD + middle + tail


def test_no_environment_values_on_the_command_line():
    line = argv(env_names=["DOCKYARD_TOKEN"])
    assert line[line.index("DOCKYARD_TOKEN") - 1] == "-e" and not any("=" in piece and "TOKEN" in piece for piece in line)


def test_a_folder_given_with_a_trailing_slash_mounts_the_same_paths():
    assert argv(folder=DIR + "/") == argv()


@pytest.mark.parametrize("field, value", [("image", "--privileged"), ("image", ""), ("key", "-x")])
def test_values_read_as_options_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        argv(**{field: value})


def test_docker_stop_argv():
    assert docker_stop_argv("7-5f1a2b3c4d5e6") == ["docker", "stop", "dockyard-job-7-5f1a2b3c4d5e6"]


def test_the_shell_line_is_docker_documented_form_and_splits_back_to_the_argv():
    line = argv(gpus=[0, 2], command=TRICKY)
    joined = shell_join(line)
    assert "--gpus '\"device=0,2\"'" in joined  # as Docker's "GPU access" page writes several devices
    assert shlex.split(joined) == line
