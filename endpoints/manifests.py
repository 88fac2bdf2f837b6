"""Deployments and endpoints → apps/v1 Deployment, Service, HPA and Gateway API HTTPRoute as plain dicts (pure)."""
from controlplane.kube.objects import labels, object_name

SERVER_PORT = 5001  # azureml-inference-server-http's default port
CONTAINER = "inference-server"
CODE_ROOT = "/var/azureml-app"
HTTPROUTE_API = "gateway.networking.k8s.io/v1"
HTTPROUTE_CRD = "httproutes.gateway.networking.k8s.io"


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
    env = {
        "AZUREML_ENTRY_SCRIPT": f"{code['code'].rstrip('/')}/{code['scoring_script']}" if code else "",
        "AZUREML_MODEL_DIR": spec["model"]["path"] if spec.get("model") else "",
        "WORKER_COUNT": str(spec["request_settings"]["max_concurrent_requests_per_instance"]),
        "SCORING_TIMEOUT_MS": str(spec["request_settings"]["request_timeout_ms"]),
    }
    env.update(spec.get("environment_variables") or {})
    return [{"name": key, "value": value} for key, value in env.items() if value != ""]


def deployment_manifest(*, spec: dict, name: str, namespace: str, workspace: str, endpoint: str,
                        resources: dict, node_selector: dict, replicas: int | None) -> dict:
    """The Deployment running the inference server with the deployment's resources, probes and selector.

    `replicas` None leaves the count to an HPA (the field is then not ours).
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
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": object_labels},
        "spec": {
            **({"replicas": replicas} if replicas is not None else {}),
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": {**object_labels, **selector}}, "spec": pod_spec},
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
