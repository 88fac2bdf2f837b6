"""`docker run` command lines for jobs on attached VMs (placeholder: the GPU helper's module replaces it at merge)."""


def docker_run_argv(*, key: str, folder: str, image: str, command: str, env_names: list[str], gpus: list[int],
                    shm_size: str | None, cpus: float | None, memory_mb: int | None) -> list[str]:
    """The argv that runs `command` in `image` for the job `key` whose folder on the host is `folder`."""
    raise NotImplementedError("placeholder: replaced by the docker builder at merge")
