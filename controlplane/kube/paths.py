"""REST paths of the kinds Dockyard reads and writes (raw paths: discovery would add calls to every reconcile)."""
from urllib.parse import quote

PLURALS = {
    "Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "Service": "services", "Job": "jobs",
    "Deployment": "deployments", "CustomResourceDefinition": "customresourcedefinitions",
    "InstanceType": "instancetypes", "SelfSubjectAccessReview": "selfsubjectaccessreviews",
    "HTTPRoute": "httproutes", "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "StatefulSet": "statefulsets", "PersistentVolumeClaim": "persistentvolumeclaims", "Secret": "secrets",
    "NodePool": "nodepools", "NodeClaim": "nodeclaims", "MachineDeployment": "machinedeployments",
    "PriorityClass": "priorityclasses",
}


def path_for(api_version: str, kind: str, name: str | None = None, namespace: str | None = None, sub: str | None = None) -> str:
    """The REST path of a kind (and object): /api/v1/... for the core group, /apis/<group>/<version>/... otherwise."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    parts = [base]
    if namespace:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(PLURALS[kind])
    if name:
        parts.append(quote(name, safe=""))
    if sub:
        parts.append(sub)
    return "/".join(parts)
