"""Deployments and endpoints → apps/v1 Deployment, Service, HPA and Gateway API HTTPRoute as plain dicts (pure)."""
from assets.specs.pods import fetch_init_container
from assets.specs.realise import startup_probe, with_environment
from assets.specs.snapshots import upload_sha256
from controlplane.kube.objects import labels, object_name
from controlplane.kube.resources import Shape
from endpoints.model_spec import is_stored, model_dir

SERVER_PORT = 5001  # azureml-inference-server-http's default port
CONTAINER = "inference-server"
SERVER_COMMAND = (f'exec azmlinfsrv ${{AZUREML_ENTRY_SCRIPT:+--entry_script "$AZUREML_ENTRY_SCRIPT"}} '
                  f'--port {SERVER_PORT}')
CODE_ROOT = "/var/azureml-app"
HTTPROUTE_API = "gateway.networking.k8s.io/v1"
HTTPROUTE_CRD = "httproutes.gateway.networking.k8s.io"
# Uploaded code and a registered or uploaded model: each fetched by an init container into an emptyDir the server reads
# it from (read-only); their URLs are in one Secret that reconcile renews, so pods started later (restarts, scale-ups)
# still get a live URL without the pod template changing. The template names the snapshots instead: a new code or
# model changes it, and that rolls the Deployment out.
CODE_DIR = "/var/azureml-app/code"
CODE_VOLUME, MODEL_VOLUME = "code", "model"
CODE_CONTAINER, MODEL_CONTAINER = "fetch-code", "fetch-model"
CODE_URL_KEY, MODEL_URL_KEY = "url", "model-url"
EXPIRES_ANNOTATION = "dockyard.dev/url-expires"
SNAPSHOTS_ANNOTATION = "dockyard.dev/snapshots"  # on the Secret and the pod template: which snapshots they fetch


def deployment_object_name(workspace: str, endpoint: str, deployment: str) -> str:
    """Deterministic: the same deployment always maps to the same Deployment/Service/HPA name."""
    return object_name(f"{endpoint}-{deployment}", f"{workspace}/{endpoint}/{deployment}", limit=63)


def endpoint_object_name(workspace: str, endpoint: str) -> str:
    return object_name(endpoint, f"{workspace}/{endpoint}", limit=63)


def _probe(settings: dict) -> dict:
    return {
        "httpGet": {"path": "/", "port": SERVER_PORT},
        "periodSeconds": settings["period"], "initialDelaySeconds": settings["initial_delay"],
        "timeoutSeconds": settings["timeout"], "successThreshold": settings["success_threshold"],
        "failureThreshold": settings["failure_threshold"],
    }


def _environment(spec: dict) -> list[dict]:
    """The server's variables (scoring script, model folder, workers) then the user's."""
    code = spec.get("code_configuration") or {}
    folder = (CODE_DIR if upload_sha256(code["code"]) else code["code"].rstrip("/")) if code else ""
    env = {
        "AZUREML_ENTRY_SCRIPT": f"{folder}/{code['scoring_script']}" if code else "",
        "AZUREML_MODEL_DIR": _model_folder(spec),
        "WORKER_COUNT": str(spec["request_settings"]["max_concurrent_requests_per_instance"]),
        "SCORING_TIMEOUT_MS": str(spec["request_settings"]["request_timeout_ms"]),
    }
    env.update(spec.get("environment_variables") or {})
    return [{"name": key, "value": value} for key, value in env.items() if value != ""]


def _model_folder(spec: dict) -> str:
    """Where the server finds the model: a fetched one at Azure ML's place (or model_mount_path), else the image's path."""
    model = spec.get("model")
    if not model:
        return ""
    return model_dir(model, spec.get("model_mount_path")) if is_stored(model) else model["path"]


def fetched_snapshots(spec: dict) -> dict[str, str]:
    """The Secret's keys → the `azureml://uploads/<sha256>` each URL fetches (the uploaded code, the stored model)."""
    code = spec.get("code_configuration") or {}
    fetched = {CODE_URL_KEY: code["code"]} if code and upload_sha256(code["code"]) else {}
    if is_stored(spec.get("model")):
        fetched[MODEL_URL_KEY] = spec["model"]["path"]
    return fetched


def snapshots_label(fetched: dict[str, str]) -> str:
    """`url=<sha256>,model-url=<sha256>`: what a Secret's URLs (and a pod template's fetches) name."""
    return ",".join(f"{key}={upload_sha256(reference)}" for key, reference in sorted(fetched.items()))


def code_secret_name(name: str) -> str:
    """The Secret holding the deployment's fetch URLs, code's and model's (deterministic, like the Deployment's name)."""
    return object_name(f"{name}-code", f"{name}/code", limit=63)


def code_secret_manifest(*, name: str, namespace: str, workspace: str, endpoint: str, deployment: str,
                         urls: dict[str, str], expires: int, snapshots: str) -> dict:
    """The Secret with the signed URLs of the deployment's uploaded code and model, and when they stop working."""
    object_labels = labels("online-deployment", workspace=workspace, endpoint=endpoint, deployment=deployment)
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": code_secret_name(name), "namespace": namespace, "labels": object_labels,
                     "annotations": {EXPIRES_ANNOTATION: str(expires), SNAPSHOTS_ANNOTATION: snapshots}},
        "stringData": dict(urls),
    }


def _with_fetches(pod_spec: dict, spec: dict, name: str, image: str | None) -> dict:
    """Uploaded code and a stored model fetched before the server starts (their URLs read from the deployment's Secret)."""
    fetched = fetched_snapshots(spec)
    if not fetched or not image:
        return pod_spec
    places = {CODE_URL_KEY: (CODE_CONTAINER, CODE_VOLUME, CODE_DIR), MODEL_URL_KEY: (MODEL_CONTAINER, MODEL_VOLUME, _model_folder(spec))}
    init, volumes, mounts = [], [], []
    for key in (CODE_URL_KEY, MODEL_URL_KEY):
        if key not in fetched:
            continue
        container, volume, folder = places[key]
        init.append(fetch_init_container(name=container, volume=volume, folder=folder, url=None, image=image,
                                         url_from_secret={"name": code_secret_name(name), "key": key}))
        volumes.append({"name": volume, "emptyDir": {}})
        mounts.append({"name": volume, "mountPath": folder, "readOnly": True})
    pod_spec["initContainers"], pod_spec["volumes"] = init, volumes
    pod_spec["containers"][0]["volumeMounts"] = mounts
    return pod_spec


def _with_conda(pod_spec: dict, spec: dict) -> None:
    """A conda file realised before Azure ML's inference server starts in it (the image's entrypoint is not used)."""
    conda = (spec.get("environment") or {}).get("conda_file")
    if conda:
        with_environment(pod_spec, conda, command=SERVER_COMMAND)
        pod_spec["containers"][0]["startupProbe"] = startup_probe(pod_spec["containers"][0]["livenessProbe"])


def deployment_manifest(*, spec: dict, name: str, namespace: str, workspace: str, endpoint: str,
                        resources: dict, placement: Shape | None, replicas: int | None, fetch_image: str | None = None) -> dict:
    """The Deployment running the inference server with the deployment's resources, probes and placement.

    `placement` is the instance type's Shape: its node selector, and on a compute cluster's pool the pool's toleration
    and the do-not-disrupt annotation (`Shape.pod_placement`). `replicas` None leaves the count to an HPA (the field is
    then not ours).
    """
    object_labels = labels("online-deployment", workspace=workspace, endpoint=endpoint, deployment=spec["name"])
    selector = {"dockyard.dev/online-deployment": name}
    pod_spec = {
        "enableServiceLinks": False,
        "containers": [{
            "name": CONTAINER,
            "image": spec["environment"]["image"],
            "ports": [{"name": "http", "containerPort": SERVER_PORT}],
            "env": _environment(spec),
            "resources": {key: dict(value) for key, value in resources.items() if value},
            "livenessProbe": _probe(spec["liveness_probe"]),
            "readinessProbe": _probe(spec["readiness_probe"]),
        }],
    }
    _with_fetches(pod_spec, spec, name, fetch_image)
    _with_conda(pod_spec, spec)
    fetched = fetched_snapshots(spec) if fetch_image else {}
    template_metadata = {"labels": {**object_labels, **selector},
                         **({"annotations": {SNAPSHOTS_ANNOTATION: snapshots_label(fetched)}} if fetched else {})}
    if placement is not None:
        placement.pod_placement(pod_spec, template_metadata)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": object_labels},
        "spec": {
            **({"replicas": replicas} if replicas is not None else {}),
            "selector": {"matchLabels": selector},
            "template": {"metadata": template_metadata, "spec": pod_spec},
        },
    }


def service_manifest(*, name: str, namespace: str, workspace: str, endpoint: str, deployment: str) -> dict:
    object_labels = labels("online-deployment", workspace=workspace, endpoint=endpoint, deployment=deployment)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": object_labels},
        "spec": {
            "selector": {"dockyard.dev/online-deployment": name},
            "ports": [{"name": "http", "port": 80, "targetPort": SERVER_PORT}],
        },
    }


def hpa_manifest(*, name: str, namespace: str, workspace: str, endpoint: str, deployment: str, scale: dict) -> dict:
    """target_utilization: an autoscaling/v2 HPA on CPU between min and max instances."""
    object_labels = labels("online-deployment", workspace=workspace, endpoint=endpoint, deployment=deployment)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "labels": object_labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": scale["min_instances"],
            "maxReplicas": scale["max_instances"],
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": scale["target_utilization_percentage"]},
            }}],
        },
    }


def httproute_manifest(*, name: str, namespace: str, workspace: str, endpoint: str, gateway: str,
                       backends: dict[str, int], mirror: tuple[str, int] | None) -> dict:
    """The endpoint's traffic split as HTTPRoute weights over the deployments' Services (and an optional mirror)."""
    rule: dict = {
        "matches": [{"path": {"type": "PathPrefix", "value": f"/{workspace}/{endpoint}"}}],
        "backendRefs": [{"name": service, "port": 80, "weight": weight} for service, weight in sorted(backends.items())],
    }
    if mirror:
        service, percent = mirror
        rule["filters"] = [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": service, "port": 80}, "percent": percent}}]
    return {
        "apiVersion": HTTPROUTE_API,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace, "labels": labels("online-endpoint", workspace=workspace, endpoint=endpoint)},
        "spec": {"parentRefs": [{"name": gateway}], "rules": [rule]},
    }
