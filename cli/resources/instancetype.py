"""Instance types as the CLI knows them: documents as users write them (the CR, an InstanceTypeList, or flat),
comparing them by quantity, table cells, and apply to one compute."""
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from ..client import ApiClient, Response, path_of
from ..errors import ApiError, CliError, InvalidInput
from .base import Outcome, Scope, changed, created, is_fatal, once_more_if_stale, read_if_exists
from .compute import missing_compute

KINDS = ("InstanceType", "InstanceTypeList")
GPU = "nvidia.com/gpu"
QUANTITY = re.compile(r"^(?P<number>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10**3, "M": 10**6,
           "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def instance_types_path(workspace: str, compute: str, name: str | None = None) -> str:
    return path_of("workspaces", workspace, "computes", compute, "instancetypes", *([name] if name else []))


def not_found_on_compute(client: ApiClient, workspace: str, compute: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a compute: the workspace, the compute, or the instance type itself."""
    if error.status != 404:
        return error
    return missing_compute(client, workspace, compute) or ApiError(
        404, f"Instance type '{name}' was not found on compute '{compute}'.", code="NotFound"
    )


def is_list(body: dict) -> bool:
    return body.get("kind") == "InstanceTypeList" or "items" in body


def name_of(document: object) -> str | None:
    """The name of one instance type: `metadata.name` in the Kubernetes form, `name` in the flat one."""
    if not isinstance(document, dict):
        return None
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else document.get("name")
    return name if isinstance(name, str) and name else None


def items_of(body: dict) -> list:
    items = body.get("items")
    return items if isinstance(items, list) else []


def item_document(list_body: dict, item: dict) -> dict:
    """One item of an InstanceTypeList as a document of its own (a CR gets the list's apiVersion and kind InstanceType)."""
    if "metadata" in item or "spec" in item:
        head = {"apiVersion": list_body["apiVersion"]} if "apiVersion" in list_body else {}
        return {**head, "kind": "InstanceType", **item}
    return item


def wanted(document: dict) -> tuple[object, object]:
    """(nodeSelector, resources) a document asks for."""
    spec = document.get("spec") if ("metadata" in document or "spec" in document) else document
    spec = spec if isinstance(spec, dict) else {}
    return spec.get("nodeSelector") or {}, spec.get("resources")


def quantity(value: object) -> Decimal | None:
    """The exact value of a Kubernetes quantity ("500m", "2Gi", 1), or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    match = QUANTITY.match(str(value).strip())
    if not match:
        return None
    suffix = match["suffix"] or ""
    try:
        number = Decimal(match["number"])
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            return number.scaleb(int(suffix[1:]))
        return number * (BINARY.get(suffix) or DECIMAL[suffix])
    except (InvalidOperation, KeyError, ValueError):
        return None


def same_quantity(key: str, current: object, desired: object) -> bool:
    if key == GPU:  # no GPUs may be written 0, null or left out
        return (quantity(current) or 0) == (quantity(desired) or 0)
    if current is None or desired is None:
        return current is desired
    left, right = quantity(current), quantity(desired)
    return left is not None and left == right


def differences(document: dict, row: dict) -> list[str]:
    """Which fields a PUT of `document` would change in the API's `row` (quantities compared by value)."""
    selector, resources = wanted(document)
    changes = [] if selector == (row.get("nodeSelector") or {}) else ["nodeSelector"]
    resources = resources if isinstance(resources, dict) else {}
    current = row.get("resources") or {}
    for section in ("requests", "limits"):
        desired_values = resources.get(section) if isinstance(resources.get(section), dict) else {}
        current_values = current.get(section) or {}
        for key in sorted(set(desired_values) | set(current_values)):
            if not same_quantity(key, current_values.get(key), desired_values.get(key)):
                changes.append(f"resources.{section}.{key}")
    if row.get("source") == "cluster":
        changes.append("source (adopted from the cluster)")
    return changes


def cpu_cell(row: dict) -> str:
    return pair(row, "cpu")


def memory_cell(row: dict) -> str:
    return pair(row, "memory")


def pair(row: dict, key: str) -> str:
    """`request/limit` of one resource, `-` for a missing side."""
    resources = row.get("resources") or {}
    request = (resources.get("requests") or {}).get(key)
    limit = (resources.get("limits") or {}).get(key)
    return f"{request if request is not None else '-'}/{limit if limit is not None else '-'}"


def gpu_cell(row: dict) -> int:
    return (((row.get("resources") or {}).get("limits") or {}).get(GPU)) or 0


def fits_cell(row: dict) -> str:
    """How many nodes can host it; `none!` when nodes are known and none can, `-` before the first node sync."""
    fitting = row.get("fits_nodes") or []
    if fitting:
        return str(len(fitting))
    # The API warns only when it knows nodes and none fits (with no nodes synced yet it says nothing).
    return "none!" if row.get("warnings") else "-"


@dataclass
class InstanceTypeApi:
    """`workspaces/{ws}/computes/{compute}/instancetypes/` of one compute."""

    client: ApiClient
    workspace: str
    compute: str

    def path(self, name: str | None = None) -> str:
        return instance_types_path(self.workspace, self.compute, name)

    def current(self, name: str) -> Response | None:
        """The instance type as the API shows it; None when there is no record (the built-in default is none)."""
        current = read_if_exists(self.client, self.path(name))
        if current is None or (isinstance(current.body, dict) and current.body.get("source") == "builtin"):
            return None
        return current

    def create(self, body: dict) -> Response:
        return self.client.post(self.path(), body)

    def replace(self, name: str, body: dict, etag: str | None) -> Response:
        return self.client.put(self.path(name), body, etag=etag)


def instance_type_api(client: ApiClient, scope: Scope) -> InstanceTypeApi:
    """The instance-type API of the scope's compute, after checking once that the compute exists."""
    workspace, compute = scope.workspace(), scope.compute()
    if (workspace, compute) not in scope.checked:
        scope.checked[workspace, compute] = missing_compute(client, workspace, compute)
    missing = scope.checked[workspace, compute]
    if missing is not None:
        raise missing
    return InstanceTypeApi(client, workspace, compute)


UNREAD = object()


def apply_instance_types(api: InstanceTypeApi, body: dict, dry_run: bool) -> list[Outcome]:
    """An InstanceType, or an InstanceTypeList: one POST (all or nothing) when none of its names exist, else item by item."""
    if not is_list(body):
        return [apply_instance_type(api, body, dry_run)]
    items = items_of(body)
    names = [name_of(item) for item in items]
    if not items or None in names or len(set(names)) != len(names):
        if dry_run:
            raise InvalidInput("An InstanceTypeList needs items, each with a name of its own.", target="items",
                               code="InvalidDocument")
        answer = api.create(body).body  # the API refuses it, naming every item's problem
        return [Outcome(f"instancetype/{row['name']}", "created") for row in answer.get("results", [])]
    current = {name: api.current(name) for name in names}
    if not any(current.values()):
        if not dry_run:
            api.create(body)
        return [Outcome(f"instancetype/{name}", "created", dry_run) for name in names]
    outcomes = []
    for item, name in zip(items, names, strict=True):
        try:
            outcomes.append(apply_instance_type(api, item_document(body, item), dry_run, current[name]))
        except CliError as error:
            if is_fatal(error):
                raise
            outcomes.append(Outcome(f"instancetype/{name}", "failed", dry_run, error=error))
    return outcomes


def apply_instance_type(api: InstanceTypeApi, document: dict, dry_run: bool, current=UNREAD) -> Outcome:
    """POST a new instance type, or PUT the whole of an existing one with If-Match."""
    name = name_of(document)
    if name is None:
        target = "metadata.name" if "metadata" in document or "spec" in document else "name"
        raise InvalidInput("The instance type has no name.", target=target, code="InvalidDocument")
    reads = iter([current])  # what the caller read already serves the first attempt; a retry reads again
    return once_more_if_stale(lambda: apply_instance_type_once(api, document, dry_run, name, next(reads, UNREAD)))


def apply_instance_type_once(api: InstanceTypeApi, document: dict, dry_run: bool, name: str, current) -> Outcome:
    resource = f"instancetype/{name}"
    if current is UNREAD:
        current = api.current(name)
    if current is None:
        return created(resource, dry_run, lambda: api.create(document))
    if dry_run:
        return changed(resource, differences(document, current.body), True)
    after = api.replace(name, document, current.etag)
    return Outcome(resource, "unchanged" if same_spec(after.body, current.body) else "configured")


def same_spec(after: dict, before: dict) -> bool:
    """The API leaves an unchanged instance type as it was; a change shows in its shape or its source (adoption)."""
    return all(after.get(key) == before.get(key) for key in ("nodeSelector", "resources", "source", "updated_on"))
