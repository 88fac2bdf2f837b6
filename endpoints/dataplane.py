"""The data plane: a scoring request goes to one deployment (by traffic weight or header) and is mirrored by share.

It calls the running servers directly — a local server on its Unix socket, or a cluster's Service through the API
server's service proxy — which is why it, besides reconcile, may use `kube` and the local runner's files.
"""
import http.client
import logging
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from compute.connections import connection_for, namespace_of
from compute.runners import local as runner
from compute.runners import unix_http
from controlplane.kube import client as kube

from .manifests import CONTAINER, deployment_object_name
from .models import OnlineDeployment, OnlineEndpoint

logger = logging.getLogger(__name__)

HEADER = "azureml-model-deployment"
_mirrors = ThreadPoolExecutor(max_workers=4, thread_name_prefix="score-mirror")


@dataclass(frozen=True)
class Answer:
    """What a deployment answered: passed on to the caller as it is."""

    status: int
    content_type: str
    body: bytes
    deployment: str


class ScoringError(Exception):
    """Why no deployment could answer: an HTTP status and a code for the API's error shape."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code


def choose(endpoint: OnlineEndpoint, names: set[str], requested: str | None) -> str:
    """The deployment for one request: the one the header names, else one drawn by the traffic weights."""
    if requested:
        if requested not in names:
            raise ScoringError(404, "DeploymentNotFound", f"Endpoint '{endpoint.name}' has no deployment '{requested}'.")
        return requested
    weighted = [(name, share) for name, share in endpoint.traffic.items() if share and name in names]
    if not weighted:
        raise ScoringError(404, "NoTraffic", f"Endpoint '{endpoint.name}' sends no traffic to any deployment: set its traffic, "
                                             f"or name a deployment in the {HEADER} header.")
    return random.choices([name for name, _ in weighted], weights=[share for _, share in weighted])[0]


def _timeout(deployment: OnlineDeployment) -> float:
    return deployment.spec["request_settings"]["request_timeout_ms"] / 1000


def _post_local(path: str, body: bytes, headers: dict, timeout: float) -> tuple[int, str, bytes]:
    """POST to a local server's /score over its Unix socket, on a new connection (its sync workers close each one).

    http.client, not httpx: with no connection to reuse, httpx's extra layers took about half of the forward's time.
    The timeout bounds the connect and each read, as httpx's did.
    """
    return unix_http.request(path, "POST", "/score", body, headers, timeout)


def forward(deployment: OnlineDeployment, body: bytes, content_type: str) -> Answer:
    """Send the request to the deployment's server and return its answer unchanged."""
    headers = {"Content-Type": content_type or "application/json"}
    endpoint = deployment.endpoint
    if endpoint.compute_id is None:
        path = deployment.runner.get("socket")
        if not path or deployment.status.get("state") != "Running":
            raise ScoringError(503, "DeploymentNotReady", f"Deployment '{deployment.name}' is not serving yet ({deployment.status.get('state') or 'starting'}).")
        try:
            status, kind, content = _post_local(path, body, headers, _timeout(deployment))
        except TimeoutError:
            raise ScoringError(504, "ScoringTimeout", f"Deployment '{deployment.name}' did not answer within its request timeout.") from None
        except (OSError, http.client.HTTPException):
            raise ScoringError(502, "DeploymentUnreachable", f"Deployment '{deployment.name}' is not answering (restarting?).") from None
        return Answer(status, kind, content, deployment.name)
    namespace = namespace_of(endpoint.compute)
    service = deployment_object_name(endpoint.workspace.name, endpoint.name, deployment.name)
    try:
        status, kind, content = kube.proxy_post(connection_for(endpoint.compute), namespace, service, 80, "score", body, headers, _timeout(deployment))
    except kube.KubeError as exc:
        raise ScoringError(502, "DeploymentUnreachable", f"Deployment '{deployment.name}' could not be reached through the cluster: {exc}") from None
    return Answer(status, kind, content, deployment.name)


def _mirror(deployment: OnlineDeployment, body: bytes, content_type: str) -> None:
    try:
        forward(deployment, body, content_type)
    except ScoringError as exc:
        logger.info("Mirrored request to %s failed: %s", deployment.name, exc)


def score(endpoint: OnlineEndpoint, deployments: dict[str, OnlineDeployment], body: bytes, content_type: str, requested: str | None) -> Answer:
    """Answer one scoring request; a copy goes to the mirror deployment for its share of requests (answer dropped)."""
    chosen = choose(endpoint, set(deployments), requested)
    for name, share in endpoint.mirror_traffic.items():
        if share and name in deployments and name != chosen and random.random() * 100 < share:
            _mirrors.submit(_mirror, deployments[name], body, content_type)
    return forward(deployments[chosen], body, content_type)


def deployment_logs(deployment: OnlineDeployment, lines: int) -> str:
    """The last lines of the deployment's server output (every replica's on Kubernetes)."""
    if deployment.endpoint.compute_id is None:
        return local_logs(deployment, lines)
    try:
        return kube_logs(deployment, lines)
    except kube.KubeError as exc:
        raise ScoringError(502, "DeploymentUnreachable", f"The cluster did not give the logs of '{deployment.name}': {exc}") from None


def local_logs(deployment: OnlineDeployment, lines: int) -> str:
    """The last lines of a local server's output file."""
    try:
        text = (deployment.local_folder / runner.LOG_FILE).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def kube_logs(deployment: OnlineDeployment, lines: int) -> str:
    """The last lines of each replica's server log."""
    endpoint = deployment.endpoint
    conn = connection_for(endpoint.compute)
    namespace = namespace_of(endpoint.compute)
    name = deployment_object_name(endpoint.workspace.name, endpoint.name, deployment.name)
    parts = []
    for pod in kube.list_objects(conn, "v1", "Pod", namespace, f"dockyard.dev/online-deployment={name}"):
        try:
            text = kube.pod_log(conn, namespace, pod["metadata"]["name"], CONTAINER, tail_lines=lines)
        except kube.KubeRejected as exc:
            text = f"(no log: {exc})"
        parts.append(f"== {pod['metadata']['name']} ==\n{text.rstrip()}")
    return "\n".join(parts)
