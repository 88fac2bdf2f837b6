"""Jobs on attached VMs over SSH: a detached process (or `docker run`) in a folder of its own on the host, followed by
short looks that read its state and new log bytes; everything needed to adopt it again lives on the host.

A look is one SSH connection and one command (compute/runners/ssh_jobs.follow_command). The log cursor is a byte
offset saved in job.runner after the lines are stored, so a dropped connection or a killed worker loses nothing and
doubles nothing: the next look reads from the saved offset.
"""
import logging
import shutil
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from compute import vmsizes
from compute.models import ComputeTarget
from compute.runners import docker_run, ssh, ssh_jobs
from controlplane.reconciling import ProvisioningState

from .. import staging
from ..choices import JobStatus
from ..files import OUTPUTS, WORKDIR, FileRefused, claim_run_folder, prepare_workdir, run_folder
from ..models import Job
from ..spec import DEFAULT_SHM, render_command
from . import gpus
from .followed import collect_output, end, exit_reason
from .status import event, save, transition

logger = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RESTARTED = "The host restarted while the job ran: its process is gone and left no exit code."
AT_ONCE = 0.05  # seconds: look again right after this look's transaction commits
UNREACHABLE = "unreachable"  # runner: the host did not answer at a look (said once in an event)


class NotStarted(Exception):
    """The job cannot be started on the host; the message is the job's reason."""


def look_seconds() -> float:
    return settings.DOCKYARD_SSH_LOOK_SECONDS


def job_key(job: Job) -> str:
    """The job's folder name on the host: its id and its creation in µs (hex), unique across installs sharing a host."""
    return f"{job.pk}-{(job.created_at - EPOCH) // timedelta(microseconds=1):x}"


def _folder(job: Job) -> str:
    """Where the job lives on the host: the absolute folder once known, else relative to the SSH user's home."""
    return job.runner.get("dir") or f"{settings.DOCKYARD_SSH_JOBS_DIR.rstrip('/')}/{job_key(job)}"


def _host(compute: ComputeTarget) -> ssh.SshHost:
    return ssh.SshHost.of_record(compute.properties or {}, compute.secrets or {})


def _not_ready(compute: ComputeTarget) -> str:
    """Why jobs cannot start on the VM now ("" when they can): attaching, host key to confirm, failed."""
    status = compute.status or {}
    said = f" ({status['message']})" if status.get("message") else ""
    if compute.provisioning_state == ProvisioningState.FAILED:
        return f"Waiting for vm {compute.name}: it is not usable{said}."
    if compute.provisioning_state != ProvisioningState.SUCCEEDED:
        return f"Waiting for vm {compute.name} to be attached{said}."
    if not (compute.properties or {}).get("host_key") or status.get("host_key_confirmed") is False:
        return f"Waiting for vm {compute.name}: its host key is not confirmed yet{said}."
    return ""


def reconcile_ssh(job: Job) -> float | None:
    """Start, follow, time out or cancel a job on an attached VM; returns seconds until the next look (None: done)."""
    if job.compute is None:
        save(job, transition(job, JobStatus.FAILED, f"The vm '{job.compute_name}' was detached; the job's process "
                                                    "on it, if any, is no longer followed."))
        return None
    if job.runner.get("pid"):
        return _follow(job)
    return _start(job)


# Start


def _wait(job: Job, reason: str) -> float:
    """Queued with the reason; looked at again (the VM may come back, a GPU may free up)."""
    save(job, transition(job, JobStatus.QUEUED, reason))
    return look_seconds() * 3


def _start(job: Job) -> float | None:
    compute = job.compute
    why = _not_ready(compute)
    if why:
        return _wait(job, why)
    why = gpus.impossible(job)
    if why:
        save(job, transition(job, JobStatus.FAILED, why))
        return None
    chosen_before = gpus.GPUS in job.runner
    allotted, why = gpus.allot(job)
    if allotted is None:
        return _wait(job, why)
    if not chosen_before and gpus.GPUS in job.runner:
        return AT_ONCE  # the choice is committed (and the VM's row unlocked) before any file is shipped
    try:
        with ssh.session(_host(compute)) as remote:
            _launch(job, remote, allotted)
    except ssh.SshError as exc:
        return _wait(job, f"Waiting for vm {compute.name}: {exc}")
    except (NotStarted, FileRefused, OSError, ValueError) as exc:
        save(job, transition(job, JobStatus.FAILED, f"The job could not be started on vm {compute.name}: {exc}"))
        return None
    return look_seconds()


def _launch(job: Job, remote: ssh.Session, allotted: list[int]) -> None:
    """Make the job's folder, ship its files and launch it, or adopt it when a crashed start launched it already."""
    compute = job.compute
    key = job_key(job)
    folder, launched = ssh_jobs.parse_prepare(_run(remote, ssh_jobs.prepare_command(_folder(job)),
                                                   "its folder could not be made").stdout)
    container = ssh_jobs.unit_name(key) if _image(job) else ""
    if not launched:
        _ship(job, remote, folder, allotted, key)
    systemd = (compute.status or {}).get("systemd") is True
    pid, boot_id = ssh_jobs.parse_launch(_run(remote, ssh_jobs.launch_command(folder, key, systemd),
                                              "its process could not be launched").stdout)
    if pid is None:
        raise NotStarted(f"its process did not start (no pid in {folder}).")
    if launched:
        event(job, "Adopted", f"Process {pid} was launched by an earlier start whose record was lost: followed, "
                              "not started again.")
    job.runner = {"dir": folder, "key": key, "pid": pid, "boot_id": boot_id, "log_offset": 0, "gpus": allotted,
                  "container": container}
    event(job, "Started", f"Process {pid} on vm {compute.name} ({_host(compute).where}), folder {folder}.")
    fields = transition(job, JobStatus.STARTING, "Starting the job on the host.")
    save(job, fields + transition(job, JobStatus.RUNNING, "") + ["runner"])


def _run(remote: ssh.Session, command: str, failure: str, stdin: bytes | None = None) -> ssh.Result:
    result = remote.run(command, stdin=stdin)
    if not result.ok:
        raise NotStarted(f"{failure} (exit status {result.exit_status}).")
    return result


def _image(job: Job) -> str:
    return (job.spec.get("environment") or {}).get("image") or ""


def _ship(job: Job, remote: ssh.Session, folder: str, allotted: list[int], key: str) -> None:
    """The code (an upload) and the fetched inputs, staged in the local run folder, copied over SFTP; `env` and
    `command.sh` written."""
    local = claim_run_folder(job)
    copied = prepare_workdir(job, local / WORKDIR)
    arrived = staging.stage_inputs(job, local)
    remote.put([str(local / WORKDIR)], folder)
    if arrived:
        remote.put([str(staging.inputs_folder(local) / item.name) for item in arrived], f"{folder}/{staging.INPUTS}")
    inputs = f"{folder}/{staging.INPUTS}"
    command = render_command(job.spec, inputs_dir=inputs, resolved=job.resolved_inputs)
    variables = _variables(job, folder, allotted)
    if _image(job):
        command = docker_run.shell_join(_docker_argv(job, folder, key, command, sorted(variables), allotted))
    _run(remote, ssh_jobs.write_file_command(folder, "env", private=True), "its environment could not be written",
         ssh_jobs.env_file(variables).encode())
    _run(remote, ssh_jobs.write_file_command(folder, "command.sh"), "its command could not be written",
         (command + "\n").encode())
    if copied:
        event(job, "CodeCopied", f"{copied}, shipped to {folder}/{WORKDIR}.")
    if arrived:
        event(job, "InputsFetched", f"Inputs in {inputs} (read-only): " + "; ".join(map(str, arrived)) + ".")


def _variables(job: Job, folder: str, allotted: list[int]) -> dict[str, str]:
    """The job's own variables and Dockyard's; a process sees only its allotted GPUs, a container gets them by --gpus
    (and none at all when none were allotted: a CUDA image's NVIDIA_VISIBLE_DEVICES=all would otherwise show every GPU
    where NVIDIA's runtime is Docker's default)."""
    variables = {key: str(value) for key, value in (job.spec.get("environment_variables") or {}).items()}
    workdir = "/workdir" if _image(job) else f"{folder}/{WORKDIR}"
    variables.update(DOCKYARD_JOB_NAME=job.name, DOCKYARD_WORKSPACE=job.workspace.name, DOCKYARD_JOB_DIR=workdir)
    if not _image(job):
        variables["CUDA_VISIBLE_DEVICES"] = gpus.cuda_visible_devices(allotted)
    elif not allotted:
        variables["NVIDIA_VISIBLE_DEVICES"] = "void"
    return variables


def _docker_argv(job: Job, folder: str, key: str, command: str, names: list[str], allotted: list[int]) -> list[str]:
    size = vmsizes.vm_size(job.instance_type) if job.instance_type else None
    # Azure ML's default shm_size (2g) too: Docker's own default /dev/shm (64m) is too small for data loaders.
    shm = job.spec["resources"].get("shm_size") or DEFAULT_SHM
    return docker_run.docker_run_argv(
        key=key, folder=folder, image=_image(job), command=command, env_names=names, gpus=allotted, shm_size=shm, cpus=size.vcpus if size else None,
        memory_mb=int(size.memory_gib * 1024) if size else None,
    )


# Follow


def _follow(job: Job) -> float | None:
    try:
        with ssh.session(_host(job.compute)) as remote:
            return _look(job, remote)
    except ssh.SshError as exc:
        _unreachable(job, exc)
        return look_seconds()
    except ValueError as exc:  # an answer cut short: nothing was stored from it; the next look reads it again
        logger.info("Look at job %s: %s", job.name, exc)
        return look_seconds()


def _unreachable(job: Job, exc: ssh.SshError) -> None:
    """The job stays as it was (it runs on without us); said once, until the host answers again."""
    if job.runner.get(UNREACHABLE):
        return
    event(job, "HostUnreachable", f"{exc} The job is looked at again; nothing it printed is lost.", "Warning")
    job.runner = {**job.runner, UNREACHABLE: True}
    job.save(update_fields=["runner", "updated_at"])


def _look(job: Job, remote: ssh.Session) -> float | None:
    if job.runner.pop(UNREACHABLE, None):
        event(job, "HostReachable", f"vm {job.compute.name} answers again.")
        job.save(update_fields=["runner", "updated_at"])
    seen: list[ssh_jobs.Followed] = []

    def read(offset: int, final: bool) -> tuple[list[str], int]:
        answer = remote.run(ssh_jobs.follow_command(job.runner["dir"], offset))
        seen.append(ssh_jobs.parse_follow(answer.stdout))
        return ssh_jobs.log_lines(seen[-1], offset, final)

    collect_output(job, read, final=False)
    now = seen[-1]
    if now.missing:
        end(job, JobStatus.FAILED, f"The job's folder {job.runner['dir']} is gone from vm {job.compute.name}.")
        return None
    if job.status == JobStatus.CANCEL_REQUESTED:
        return _stop_and_end(job, remote, read, JobStatus.CANCELED, "Canceled by request; the process group was stopped.")
    timeout = (job.spec.get("limits") or {}).get("timeout")
    running = now.alive and now.exit_code is None and not now.rebooted
    if running and timeout and job.start_time and (timezone.now() - job.start_time).total_seconds() > timeout:
        return _stop_and_end(job, remote, read, JobStatus.FAILED,
                             f"The job timed out after {timeout} s (limits.timeout); its processes were stopped.")
    if running:
        return look_seconds()
    if now.alive and not now.rebooted:
        _stop(job, remote)  # the command exited but left children behind: they go with the job
    collect_output(job, read, final=True)
    _fetch_outputs(job, remote)
    if now.rebooted or now.exit_code is None:
        end(job, JobStatus.FAILED, RESTARTED)
    elif now.exit_code == 0:
        end(job, JobStatus.COMPLETED, "", exit_code=0)
    else:
        end(job, JobStatus.FAILED, exit_reason(now.exit_code), exit_code=now.exit_code)
    return None


def _stop(job: Job, remote: ssh.Session) -> bool:
    return ssh_jobs.stopped(remote.run(ssh_jobs.stop_command(_folder(job), job.runner.get("container", "")),
                                       timeout=ssh_jobs.GRACE * 2 + 30).stdout)


def _stop_and_end(job: Job, remote: ssh.Session, read, status: str, reason: str) -> None:
    if not _stop(job, remote):
        event(job, "ProcessesLeft", "Some of the job's processes were still there after SIGKILL.", "Warning")
    collect_output(job, read, final=True)
    _fetch_outputs(job, remote)
    end(job, status, reason)
    return None


def _fetch_outputs(job: Job, remote: ssh.Session) -> None:
    """The host's ./outputs copied into the local run folder, where jobs/staging.keep_outputs reads them."""
    local = run_folder(job) / WORKDIR
    shutil.rmtree(local / OUTPUTS, ignore_errors=True)
    local.mkdir(parents=True, exist_ok=True)
    try:
        size = ssh_jobs.parse_outputs_size(remote.run(ssh_jobs.outputs_size_command(job.runner["dir"])).stdout)
        if size is None:
            return
        if size > settings.DOCKYARD_SNAPSHOT_MAX_BYTES:  # said before any byte is copied to this host
            event(job, "OutputsNotFetched", f"./outputs on vm {job.compute.name} holds about {size} bytes, more than "
                                            f"{settings.DOCKYARD_SNAPSHOT_MAX_BYTES} (DOCKYARD_SNAPSHOT_MAX_BYTES): it "
                                            f"is left on the host in {job.runner['dir']}.", "Warning")
            return
        left_out = remote.get([f"{job.runner['dir']}/{WORKDIR}/{OUTPUTS}"], str(local),
                              max_bytes=settings.DOCKYARD_SNAPSHOT_MAX_BYTES)
        if left_out:
            event(job, "OutputsLeftOut", f"{left_out} entries of ./outputs were not copied back (symbolic links to an "
                                         "absolute path or out of the folder); they are still on the host.", "Warning")
    except ssh.SshError as exc:
        event(job, "OutputsNotFetched", f"./outputs could not be copied back from vm {job.compute.name}: {exc}",
              "Warning")


def stop_ssh(job: Job) -> bool:
    """Stop what the job runs on its host (cancel, delete) and remove its folder there; True once nothing of it runs
    there any more. A host that refuses us for good (its record changed) keeps what is there; one that does not
    answer is tried again."""
    shutil.rmtree(run_folder(job), ignore_errors=True)
    if job.compute is None or _not_ready(job.compute) and not job.runner.get("pid"):
        return True
    key = job.runner.get("key") or job_key(job)
    try:
        with ssh.session(_host(job.compute)) as remote:
            _stop(job, remote)
            remote.run(ssh_jobs.remove_command(settings.DOCKYARD_SSH_JOBS_DIR, key))
    except ssh.SshError as exc:
        if exc.transient:
            return False
        logger.warning("Job %s's folder on vm %s is left there: %s", job.name, job.compute.name, exc)
    return True
