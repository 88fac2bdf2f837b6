"""Job records → batch/v1 Job (+ headless Service for distributed jobs, + the Secret of its URLs) as plain dicts (pure).

A job's pod: init containers fetch its code into the working directory (an emptyDir, `./outputs` in it) and each
resolved input under INPUTS_DIR; a native sidecar uploads `./outputs` when the main container ends. The signed URLs
they use are in the job's Secret (`<job>-urls`), mounted as a volume and read when each step runs, so Dockyard can
renew them while the job waits (see jobs/reconcile/kubernetes.py).
"""
import re
import shlex
from dataclasses import dataclass, field

from assets.specs.pods import (
    SMALL,
    URLS_DIR,
    fetch_init_container,
    file_fetch_container,
    snapshot_fetch_container,
    upload_sidecar,
    url_secret_manifest,
    urls_volume,
)
from assets.specs.realise import with_environment
from controlplane.kube.objects import labels, object_name
from controlplane.kube.resources import Shape

from .spec import render_command, shm_quantity
from .spec_io import output_is_file

RENDEZVOUS_PORT = 29500
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
NAME_LIMIT = 52  # Indexed pods are named <job>-<index>-<suffix> and get the hostname <job>-<index> (≤ 63)
CONTAINER = "main"
CODE_CONTAINER = "fetch-code"
OUTPUTS_CONTAINER = "make-outputs"
UPLOAD_CONTAINER = "upload-outputs"
CODE_VOLUME = "code"
CODE_DIR = "/var/dockyard/code"  # the job's working directory: its uploaded code, fetched by the init container
OUTPUTS_DIR = f"{CODE_DIR}/outputs"  # ./outputs, collected when the main container ends (Azure ML's convention)
INPUTS_VOLUME = "inputs"
INPUTS_DIR = "/var/dockyard/inputs"
# How long a stopped pod (deadline, cancel) has before SIGKILL: the main container's SIGTERM, then the upload.
UPLOAD_GRACE_SECONDS = 120
URLS_SUFFIX = "-urls"


@dataclass(frozen=True)
class Delivery:
    """What the pod fetches and where it uploads: the busybox image, whether there is code, the resolved inputs
    (Job.resolved_inputs), and the memory limit of the upload sidecar (it holds the packed outputs while posting)."""

    image: str
    code: bool = False
    inputs: dict = field(default_factory=dict)
    upload_memory: str = "320Mi"


def urls_secret_name(job_name: str) -> str:
    return job_name + URLS_SUFFIX  # job names are at most NAME_LIMIT characters: this stays a DNS subdomain


def input_key(name: str) -> str:
    """The Secret key of an input's URL (input names are [A-Za-z_][A-Za-z0-9_]*: valid Secret keys)."""
    return f"input-{name}"


def input_container_name(index: int, name: str) -> str:
    """A DNS-1123 label whatever the input's name: its index keeps it unique, the name (lowercased) says which."""
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return f"input-{index}-{slug}"[:63].rstrip("-")


def _work_steps(delivery: Delivery, spec: dict) -> list[dict]:
    """The working directory: the code fetched into it (when there is code), then ./outputs and each declared folder
    output in it (`${{outputs.x}}` is a folder the command writes into, as on local) made writable by any uid."""
    folders = " ".join([OUTPUTS_DIR] + [shlex.quote(f"{OUTPUTS_DIR}/{name}") for name in spec.get("outputs") or {}
                                        if not output_is_file(spec, name)])
    make = f"mkdir -p {folders} && chmod a+rwx {CODE_DIR} {folders} && echo 'made ./outputs in {CODE_DIR}'"
    if delivery.code:
        fetch = fetch_init_container(name=CODE_CONTAINER, volume=CODE_VOLUME, folder=CODE_DIR, url=None,
                                     image=delivery.image, url_file=f"{URLS_DIR}/code")
        fetch["command"][2] += f"; {make}"
        return [fetch]
    return [{"name": OUTPUTS_CONTAINER, "image": delivery.image, "command": ["/bin/sh", "-c", make],
             "volumeMounts": [{"name": CODE_VOLUME, "mountPath": CODE_DIR}], "resources": SMALL}]


def _input_step(index: int, name: str, resolved: dict, image: str) -> dict:
    """One input fetched into INPUTS_DIR/<name>: a snapshot's files, or the one file of a URL saved as `file`."""
    common = {"name": input_container_name(index, name), "image": image, "volume": INPUTS_VOLUME,
              "mount_path": INPUTS_DIR, "folder": f"{INPUTS_DIR}/{name}"}
    if "snapshot" in resolved:
        return snapshot_fetch_container(**common, url_file=f"{URLS_DIR}/{input_key(name)}")
    return file_fetch_container(**common, file=resolved["file"], url=resolved["url"])


def _with_delivery(pod_spec: dict, spec: dict, job_name: str, delivery: Delivery, indexed: bool) -> dict:
    """Fetch steps, the working directory, the inputs' mounts and the outputs sidecar, all fed by the URL Secret."""
    main = pod_spec["containers"][0]
    main["workingDir"] = CODE_DIR
    main["volumeMounts"].append({"name": CODE_VOLUME, "mountPath": CODE_DIR})
    pod_spec["volumes"] += [{"name": CODE_VOLUME, "emptyDir": {}}, urls_volume(urls_secret_name(job_name))]
    steps = _work_steps(delivery, spec)
    if delivery.inputs:
        pod_spec["volumes"].append({"name": INPUTS_VOLUME, "emptyDir": {}})
    modes = {name: (value.get("mode") if isinstance(value, dict) else None) or "ro_mount"
             for name, value in (spec.get("inputs") or {}).items()}
    for index, (name, resolved) in enumerate(sorted(delivery.inputs.items())):
        steps.append(_input_step(index, name, resolved, delivery.image))
        main["volumeMounts"].append({"name": INPUTS_VOLUME, "mountPath": f"{INPUTS_DIR}/{name}", "subPath": name,
                                     "readOnly": modes.get(name) == "ro_mount"})
    rank = _index_env("RANK") if indexed else {"name": "RANK", "value": "0"}
    steps.append(upload_sidecar(name=UPLOAD_CONTAINER, image=delivery.image, volume=CODE_VOLUME, workdir=CODE_DIR,
                                folder=OUTPUTS_DIR, rank_env=rank, memory_limit=delivery.upload_memory))
    pod_spec["initContainers"] = steps
    pod_spec["terminationGracePeriodSeconds"] = UPLOAD_GRACE_SECONDS
    return pod_spec


def kube_job_name(workspace: str, name: str) -> str:
    """The Job's deterministic name: a retry or a second worker can never create a second Job."""
    base = name.replace("_", "-")
    if not base[:1].isalpha():  # it also names the headless Service: a DNS-1035 label, which starts with a letter
        base = f"job-{base}"
    return object_name(base, f"{workspace}/{name}", limit=NAME_LIMIT)


def _index_env(name: str) -> dict:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}}


def _distribution_env(spec: dict, job_name: str) -> list[dict]:
    """The rank environment the framework's launcher expects (torchrun reads the PET_* variables as its options)."""
    distribution = spec.get("distribution") or {}
    nodes = spec["resources"]["instance_count"]
    if not distribution:
        return []
    if distribution["type"] == "tensorflow":
        return [{"name": "WORLD_SIZE", "value": str(nodes)}, _index_env("NODE_RANK")]
    per_node = distribution["process_count_per_instance"]
    master = f"{job_name}-0.{job_name}"
    env = [
        {"name": "MASTER_ADDR", "value": master}, {"name": "MASTER_PORT", "value": str(RENDEZVOUS_PORT)},
        {"name": "WORLD_SIZE", "value": str(nodes * per_node)}, {"name": "LOCAL_WORLD_SIZE", "value": str(per_node)},
        _index_env("NODE_RANK"),
    ]
    if per_node == 1:
        env.append(_index_env("RANK"))  # with more processes per node the launcher gives each its own RANK
    if distribution["type"] == "pytorch":
        env += [
            {"name": "PET_NNODES", "value": str(nodes)}, {"name": "PET_NPROC_PER_NODE", "value": str(per_node)},
            _index_env("PET_NODE_RANK"), {"name": "PET_MASTER_ADDR", "value": master},
            {"name": "PET_MASTER_PORT", "value": str(RENDEZVOUS_PORT)},
        ]
    return env


def _tf_config_prefix(spec: dict, job_name: str) -> str:
    """TF_CONFIG names every worker and this pod's index; the index is only known inside the pod."""
    workers = ",".join(f'\\"{job_name}-{index}.{job_name}:2222\\"' for index in range(spec["resources"]["instance_count"]))
    return (f'export TF_CONFIG="{{\\"cluster\\":{{\\"worker\\":[{workers}]}},'
            f'\\"task\\":{{\\"type\\":\\"worker\\",\\"index\\":$NODE_RANK}}}}"\n')


def _container(spec: dict, job_name: str, shape: Shape, resolved: dict) -> dict:
    command = render_command(spec, "outputs", INPUTS_DIR, resolved)
    if (spec.get("distribution") or {}).get("type") == "tensorflow":
        command = _tf_config_prefix(spec, job_name) + command
    env = [{"name": key, "value": value} for key, value in sorted(spec.get("environment_variables", {}).items())]
    return {
        "name": CONTAINER,
        "image": spec["environment"]["image"],
        "command": ["/bin/sh", "-c", command],
        "env": env + _distribution_env(spec, job_name),
        "resources": shape.container_resources(),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def job_manifest(*, spec: dict, job_name: str, namespace: str, workspace: str, shape: Shape,
                 delivery: Delivery | None = None) -> dict:
    """The batch/v1 Job: one pod per node, never restarted, shaped by the instance type; its code and inputs fetched
    first, its ./outputs uploaded last (`delivery`; without it, the bare pod: the command in the image's folder)."""
    object_labels = labels("job", workspace=workspace, job=job_name)
    nodes = spec["resources"]["instance_count"]
    distributed = bool(spec.get("distribution")) or nodes > 1
    pod_spec = {
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "containers": [_container(spec, job_name, shape, delivery.inputs if delivery else {})],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_quantity(spec["resources"]["shm_size"])}}],
    }
    if delivery:
        _with_delivery(pod_spec, spec, job_name, delivery, indexed=distributed)
    with_environment(pod_spec, spec["environment"].get("conda_file"))  # realised before the command runs
    template_metadata = {"labels": object_labels}
    shape.pod_placement(pod_spec, template_metadata)
    if distributed:
        pod_spec["subdomain"] = job_name  # with the headless Service: <job>-<index>.<job> resolves to each pod
    job_spec = {"backoffLimit": 0, "template": {"metadata": template_metadata, "spec": pod_spec}}
    if distributed:
        job_spec.update(completionMode="Indexed", completions=nodes, parallelism=nodes)
    if spec.get("limits", {}).get("timeout"):
        job_spec["activeDeadlineSeconds"] = spec["limits"]["timeout"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job_name, "namespace": namespace, "labels": object_labels,
                     "annotations": {"dockyard.dev/job-name": spec["name"]}},
        "spec": job_spec,
    }


def service_manifest(*, job_name: str, namespace: str, workspace: str) -> dict:
    """The headless Service that gives each rank of a distributed job a DNS name, ready or not."""
    object_labels = labels("job", workspace=workspace, job=job_name)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": job_name, "namespace": namespace, "labels": object_labels},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"dockyard.dev/job": job_name},
            "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}],
        },
    }


def job_manifests(*, spec: dict, job_name: str, namespace: str, workspace: str, shape: Shape,
                  delivery: Delivery | None = None) -> list[dict]:
    """The Job and, for distributed jobs, its Service first so rank 0's name resolves when the pods start. (The URL
    Secret is applied after the Job: it names the Job as its owner, whose uid the cluster gives.)"""
    job = job_manifest(spec=spec, job_name=job_name, namespace=namespace, workspace=workspace, shape=shape,
                       delivery=delivery)
    if "completionMode" in job["spec"]:
        return [service_manifest(job_name=job_name, namespace=namespace, workspace=workspace), job]
    return [job]


def urls_secret_manifest(*, job_name: str, namespace: str, workspace: str, urls: dict[str, str], expires: int,
                         job_uid: str) -> dict:
    """The job's URL Secret, owned by its Job: the cluster's garbage collector deletes it with the Job, however the Job
    goes (Dockyard's cancel or delete, an admin's kubectl, a TTL)."""
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job_uid}
    return url_secret_manifest(name=urls_secret_name(job_name), namespace=namespace,
                               labels=labels("job", workspace=workspace, job=job_name), urls=urls, expires=expires,
                               owner=owner)
