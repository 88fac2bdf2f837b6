"""Instance-type documents as users write them (the CR, an InstanceTypeList, or flat), and comparing them (pure)."""
import re
from decimal import Decimal, InvalidOperation

GPU = "nvidia.com/gpu"
QUANTITY = re.compile(r"^(?P<number>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10**3, "M": 10**6,
           "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


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
