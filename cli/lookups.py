"""API paths of workspace-scoped resources, and turning the API's bare 404s into which thing is missing."""
from .client import ApiClient, Response, path_of
from .errors import ApiError


def computes_path(workspace: str, name: str | None = None) -> str:
    return path_of("workspaces", workspace, "computes", *([name] if name else []))


def instance_types_path(workspace: str, compute: str, name: str | None = None) -> str:
    return path_of("workspaces", workspace, "computes", compute, "instancetypes", *([name] if name else []))


def nodes_path(workspace: str, compute: str) -> str:
    return path_of("workspaces", workspace, "computes", compute, "nodes")


def jobs_path(workspace: str, name: str | None = None, action: str | None = None) -> str:
    """`workspaces/{ws}/jobs/`, one job's path, or one of its actions (cancel, logs)."""
    return path_of("workspaces", workspace, "jobs", *[part for part in (name, action) if part])


def read_if_exists(client: ApiClient, path: str) -> Response | None:
    try:
        return client.get(path)
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def workspace_not_found(workspace: str) -> ApiError:
    return ApiError(404, f"Workspace '{workspace}' was not found, or you are not a member of it.", code="NotFound")


def compute_not_found(workspace: str, compute: str) -> ApiError:
    return ApiError(404, f"Compute '{compute}' was not found in workspace '{workspace}'.", code="NotFound")


def missing_compute(client: ApiClient, workspace: str, compute: str) -> ApiError | None:
    """None when the compute exists; otherwise the error that says whether the workspace or the compute is missing."""
    if read_if_exists(client, computes_path(workspace, compute)) is not None:
        return None
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        return workspace_not_found(workspace)
    return compute_not_found(workspace, compute)


def not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """Turn the API's bare 404 into which one is missing: the workspace or the compute."""
    if error.status != 404:
        return error
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        return workspace_not_found(workspace)
    return compute_not_found(workspace, name)


def job_not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a workspace's jobs: the workspace or the job."""
    if error.status != 404:
        return error
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        return workspace_not_found(workspace)
    return ApiError(404, f"Job '{name}' was not found in workspace '{workspace}'.", code="NotFound")


def not_found_on_compute(client: ApiClient, workspace: str, compute: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a compute: the workspace, the compute, or the instance type itself."""
    if error.status != 404:
        return error
    return missing_compute(client, workspace, compute) or ApiError(
        404, f"Instance type '{name}' was not found on compute '{compute}'.", code="NotFound"
    )


def endpoints_path(workspace: str, name: str | None = None, action: str | None = None) -> str:
    """`workspaces/{ws}/online-endpoints/`, one endpoint's path, or one of its actions (keys)."""
    return path_of("workspaces", workspace, "online-endpoints", *[part for part in (name, action) if part])


def deployments_path(workspace: str, endpoint: str, name: str | None = None, action: str | None = None) -> str:
    """An endpoint's `deployments/`, one deployment's path, or one of its actions (logs)."""
    return path_of("workspaces", workspace, "online-endpoints", endpoint, "deployments",
                   *[part for part in (name, action) if part])


def score_path(workspace: str, endpoint: str) -> str:
    """The scoring URL's path, as API.md writes it (no trailing slash)."""
    return path_of("workspaces", workspace, "online-endpoints", endpoint, "score").rstrip("/")


def endpoint_not_found(workspace: str, name: str) -> ApiError:
    return ApiError(404, f"Online endpoint '{name}' was not found in workspace '{workspace}'.", code="NotFound")


def endpoint_not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a workspace's online endpoints: the workspace or the endpoint."""
    if error.status != 404:
        return error
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        return workspace_not_found(workspace)
    return endpoint_not_found(workspace, name)


def deployment_not_found_on_endpoint(client: ApiClient, workspace: str, endpoint: str, name: str | None,
                                     error: ApiError) -> ApiError:
    """The API's bare 404 under an endpoint's deployments: the workspace, the endpoint, or the deployment."""
    if error.status != 404:
        return error
    if read_if_exists(client, endpoints_path(workspace, endpoint)) is None:
        return endpoint_not_found_in_workspace(client, workspace, endpoint, error)
    if name is None:
        return error
    return ApiError(404, f"Online endpoint '{endpoint}' has no deployment '{name}'.", code="NotFound")
