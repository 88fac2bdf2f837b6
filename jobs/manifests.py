"""Job records → batch/v1 Job (+ headless Service for distributed jobs) as plain dicts (pure)."""
from assets.specs.pods import fetch_init_container
from assets.specs.realise import with_environment
from controlplane.kube.objects import labels, object_name
from controlplane.kube.resources import Shape

from .spec import render_command, shm_quantity

RENDEZVOUS_PORT = 29500
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
NAME_LIMIT = 52  # Indexed pods are named <job>-<index>-<suffix> and get the hostname <job>-<index> (≤ 63)
CONTAINER = "main"
CODE_CONTAINER = "fetch-code"
CODE_VOLUME = "code"
CODE_DIR = "/var/dockyard/code"  # the job's working directory: its uploaded code, fetched by the init container


def _with_code(pod_spec: dict, code: dict | None) -> dict:
    """The pod with its code fetched into an emptyDir that the main container runs in (code: {url, image})."""
    if not code:
        return pod_spec
    pod_spec["initContainers"] = [fetch_init_container(name=CODE_CONTAINER, volume=CODE_VOLUME, folder=CODE_DIR,
                                                       url=code["url"], image=code["image"])]
    pod_spec["volumes"].append({"name": CODE_VOLUME, "emptyDir": {}})
    main = pod_spec["containers"][0]
    main["workingDir"] = CODE_DIR
    main["volumeMounts"].append({"name": CODE_VOLUME, "mountPath": CODE_DIR})
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


def _container(spec: dict, job_name: str, shape: Shape) -> dict:
    command = render_command(spec)
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


def job_manifest(*, spec: dict, job_name: str, namespace: str, workspace: str, shape: Shape, code: dict | None = None) -> dict:
    """The batch/v1 Job: one pod per node, never restarted, shaped by the instance type; its code fetched first."""
    object_labels = labels("job", workspace=workspace, job=job_name)
    nodes = spec["resources"]["instance_count"]
    distributed = bool(spec.get("distribution")) or nodes > 1
    pod_spec = {
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "containers": [_container(spec, job_name, shape)],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_quantity(spec["resources"]["shm_size"])}}],
    }
    _with_code(pod_spec, code)
    with_environment(pod_spec, spec["environment"].get("conda_file"))  # realised before the command runs
    if shape.selector:
        pod_spec["nodeSelector"] = shape.selector
    if distributed:
        pod_spec["subdomain"] = job_name  # with the headless Service: <job>-<index>.<job> resolves to each pod
    job_spec = {"backoffLimit": 0, "template": {"metadata": {"labels": object_labels}, "spec": pod_spec}}
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
                  code: dict | None = None) -> list[dict]:
    """Everything a job needs in the cluster, Service first so rank 0's name resolves when the pods start."""
    job = job_manifest(spec=spec, job_name=job_name, namespace=namespace, workspace=workspace, shape=shape, code=code)
    if "completionMode" in job["spec"]:
        return [service_manifest(job_name=job_name, namespace=namespace, workspace=workspace), job]
    return [job]
