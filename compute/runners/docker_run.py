"""The `docker run` and `docker stop` command lines of a job in a container on an attached VM (pure).

Every piece is its own argv element; `shell_join` quotes them for the remote shell. Environment variables are passed
by name only (`-e NAME`): Docker takes their values from the environment of the `docker` process, which the job's
wrapper sources from the 0600 `env` file, so no value (secrets included) is ever on a command line.

`--gpus`: Docker's CLI reads the value as one CSV record, so `device=0,1` unquoted would be two fields ("device=0" and
a bare "1", read as a count); Docker's documentation (Engine, "GPU access") writes several devices as
`--gpus '"device=0,2"'`. The value therefore carries the double quotes itself, for one device as for several.
"""
import shlex

CONTAINER_PREFIX = "dockyard-job-"
JOB_LABEL = "dockyard.dev/job"
SHELL = "/bin/sh"


def container_name(key: str) -> str:
    """The container's name on the host: unique per job (the key is), findable again after a worker restart."""
    return CONTAINER_PREFIX + key


def _gpus_value(gpus: list[int]) -> str:
    return '"device=' + ",".join(str(int(index)) for index in gpus) + '"'


def _refuse_option_like(**values: str) -> None:
    """A value in an operand's place that starts with "-" would be read as an option of Docker's own."""
    for field, value in values.items():
        if not value or value.startswith("-"):
            raise ValueError(f"The {field} of a docker run must be non-empty and must not start with '-'.")


def docker_run_argv(*, key: str, folder: str, image: str, command: str, env_names: list[str], gpus: list[int],
                    shm_size: str | None = None, cpus: float | int | None = None,
                    memory_mb: int | None = None) -> list[str]:
    """`docker run` of the job's command in `image`: the job folder's workdir as /workdir (its cwd, ./outputs in it),
    its inputs read-only at the same path as on the host, environment by name, the given GPUs only; the container
    is removed when it ends and carries the job's key as name and label."""
    folder = folder.rstrip("/")
    _refuse_option_like(key=key, image=image)
    argv = ["docker", "run", "--rm", "--name", container_name(key), "--label", f"{JOB_LABEL}={key}", "--init",
            "-v", f"{folder}/workdir:/workdir", "-v", f"{folder}/inputs:{folder}/inputs:ro", "-w", "/workdir"]
    for name in env_names:
        argv += ["-e", name]
    if gpus:
        argv += ["--gpus", _gpus_value(gpus)]
    if shm_size:
        argv += ["--shm-size", str(shm_size)]
    if cpus:
        argv += ["--cpus", f"{cpus:g}" if isinstance(cpus, float) else str(cpus)]
    if memory_mb:
        argv += ["--memory", f"{int(memory_mb)}m"]
    return [*argv, image, SHELL, "-c", command]


def docker_stop_argv(key: str) -> list[str]:
    """`docker stop` of the job's container (TERM to its init, KILL after Docker's grace period)."""
    return ["docker", "stop", container_name(key)]


def shell_join(argv: list[str]) -> str:
    """The argv as one POSIX shell command line (each element quoted as needed), for the remote wrapper."""
    return shlex.join(argv)
