"""The InstanceType CRD and the CRs Dockyard writes: valid Kubernetes objects, and CRs the CRD accepts as they are.

The CRD is checked with kubernetes-validate's apiextensions.k8s.io/v1 schemas (the newest it ships and
1.30), with the API server's own CRD checks as the fake implements them, and against the rules of a
structural schema. Every generated CR is validated against the CRD's openAPIV3Schema the way the API
server does it (JSON schema with int-or-string; the fake's conversion), and must lose nothing to pruning.
"""
import copy
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from compute import shapes
from compute.manifests import (
    INSTANCE_TYPE_API_VERSION,
    INSTANCE_TYPE_CRD_NAME,
    instance_type_crd,
    instance_type_manifest,
)
from compute.models import InstanceType
from compute.reconcile.instancetypes import desired_manifest
from controlplane.kube import names
from controlplane.kube.objects import GPU, LABEL_PREFIX, MANAGED_BY
from controlplane.kube.quantities import QUANTITY_PATTERN
from tests.fake_kube.crds import prune, schema_errors, to_jsonschema, validate_crd

DATA = Path(__file__).parent / "data"
SEED_FILES = ["my_instance_type.yaml", "my_instance_type_list.yaml"]
NEWEST = ".".join(str(kubernetes_validate.latest_version()).split(".")[:2])
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")


def version_schema() -> dict:
    (version,) = instance_type_crd()["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# --- the CRD ------------------------------------------------------------------------------------

def test_kubernetes_validate_covers_a_recent_kubernetes():
    assert _minor(NEWEST) >= (1, 30)


@pytest.mark.parametrize("version", sorted({"1.30", NEWEST}))
def test_the_crd_is_a_valid_apiextensions_v1_object(version):
    assert kubernetes_validate.validate(instance_type_crd(), version, strict=True) == version


def test_kubernetes_validate_would_catch_a_broken_crd():
    broken = instance_type_crd()
    broken["spec"]["versions"][0]["servd"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, NEWEST, strict=True)


def test_the_crd_passes_the_api_servers_own_checks():
    crd = instance_type_crd()
    assert validate_crd(crd) == []
    spec = crd["spec"]
    assert crd["metadata"]["name"] == INSTANCE_TYPE_CRD_NAME == f"{spec['names']['plural']}.{spec['group']}"
    assert spec["scope"] == "Cluster" and [v["name"] for v in spec["versions"]] == ["v1alpha1"]
    assert spec["names"] == {"plural": "instancetypes", "singular": "instancetype", "kind": "InstanceType",
                             "listKind": "InstanceTypeList"}
    assert f"{spec['group']}/{spec['versions'][0]['name']}" == INSTANCE_TYPE_API_VERSION


def structural_problems(node: dict, path: str, root: bool = False, in_junctor: bool = False) -> list[str]:
    """Where a schema breaks the rules of a structural schema (Kubernetes' apiextensions validation)."""
    problems = []
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if in_junctor:
        problems += [f"{path}.{key}: not allowed inside a logical junctor"
                     for key in ("type", "description", "default", "additionalProperties", "nullable") if key in node]
    elif not node.get("type") and not (int_or_string or preserve):
        problems.append(f"{path}.type: must not be empty")
    if root and node.get("type") != "object":
        problems.append(f"{path}.type: must be object at the root")
    if int_or_string:
        if "type" in node:
            problems.append(f"{path}: x-kubernetes-int-or-string must not have a type")
        if "anyOf" in node and node["anyOf"] != INT_OR_STRING:
            problems.append(f"{path}.anyOf: must be exactly [integer, string] with x-kubernetes-int-or-string")
    if preserve and node.get("type") not in (None, "object"):
        problems.append(f"{path}: x-kubernetes-preserve-unknown-fields on a non-object")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    if node.get("type") == "object" and "items" in node or node.get("type") == "array" and "properties" in node:
        problems.append(f"{path}: fields that do not fit the type")
    if "pattern" in node:
        re.compile(node["pattern"])
    for key, child in (node.get("properties") or {}).items():
        if root and key == "metadata" and set(child.get("properties") or {}) - {"name", "generateName"}:
            problems.append(f"{path}.properties[metadata]: only name and generateName may be restricted")
        problems += structural_problems(child, f"{path}.properties[{key}]", in_junctor=in_junctor)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            problems += structural_problems(node[key], f"{path}.{key}", in_junctor=in_junctor)
    for junctor in JUNCTORS:
        children = node.get(junctor)
        if junctor == "anyOf" and int_or_string and children == INT_OR_STRING:
            continue  # the one allowed form with types inside a junctor
        for index, child in enumerate(children if isinstance(children, list) else [children] if children else []):
            problems += structural_problems(child, f"{path}.{junctor}[{index}]", in_junctor=True)
    return problems


def test_the_schema_is_structural():
    assert structural_problems(version_schema(), "openAPIV3Schema", root=True) == []


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda s: s["properties"]["spec"].pop("type"), "properties[spec].type: must not be empty"),
    (lambda s: s["properties"]["spec"]["properties"]["resources"]["properties"]["requests"]["properties"]["cpu"]
     .update(type="string"), "x-kubernetes-int-or-string must not have a type"),
    (lambda s: s["properties"].update(metadata={"type": "object", "properties": {"labels": {"type": "object"}}}),
     "only name and generateName"),
    (lambda s: s.update(anyOf=[{"type": "object"}]), "anyOf[0].type: not allowed inside a logical junctor"),
])
def test_the_structural_check_finds_what_a_server_refuses(mutate, expected):
    schema = copy.deepcopy(version_schema())
    mutate(schema)
    assert any(expected in problem for problem in structural_problems(schema, "openAPIV3Schema", root=True))


def test_quantities_are_int_or_string_with_the_kubernetes_pattern_and_gpus_integers():
    resources = version_schema()["properties"]["spec"]["properties"]["resources"]["properties"]
    for section, keys in (("requests", ["cpu", "memory"]), ("limits", ["cpu", "memory"])):
        for key in keys:
            node = resources[section]["properties"][key]
            assert node["x-kubernetes-int-or-string"] is True and node["pattern"] == QUANTITY_PATTERN
    assert resources["limits"]["properties"][GPU]["type"] == "integer"
    assert GPU not in resources["requests"]["properties"]  # GPUs are given under limits only


def test_printer_columns_point_at_fields_of_the_schema():
    (version,) = instance_type_crd()["spec"]["versions"]
    for column in version["additionalPrinterColumns"]:
        assert column["type"] in ("integer", "number", "string", "boolean", "date")
        node = version_schema()
        for part in re.split(r"(?<!\\)\.", column["jsonPath"].lstrip(".")):
            node = node["properties"][part.replace("\\.", ".")]
        assert node


# --- the CRs ------------------------------------------------------------------------------------

def seed_shapes() -> list[shapes.Shape]:
    return [shape for name in SEED_FILES for shape in shapes.parse_body(yaml.safe_load((DATA / name).read_text()))]


TABLE = [
    {"name": "tiny", "resources": {"requests": {"cpu": "1m", "memory": "1Ki"}, "limits": {"cpu": "1m", "memory": "1Ki"}}},
    {"name": "cores", "resources": {"requests": {"cpu": 2, "memory": "4G"}, "limits": {"cpu": "2000m", "memory": "4G"}}},
    {"name": "fractions", "resources": {"requests": {"cpu": "0.5", "memory": "0.5Gi"}, "limits": {"cpu": "1.5", "memory": "1.5Gi"}}},
    {"name": "plain-bytes", "resources": {"requests": {"cpu": "100m", "memory": "1000000"}, "limits": {"cpu": "1", "memory": "1e9"}}},
    {"name": "gpu-8", "nodeSelector": {"nvidia.com/gpu.product": "A100-SXM4-80GB", "kubernetes.io/arch": "amd64"},
     "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "16", "memory": "128Gi", GPU: 8}}},
    {"name": "gpu-as-text", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi", GPU: "2"}}},
    {"name": "gpu-zero", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi", GPU: 0}}},
    {"name": "empty-label.and.dots", "nodeSelector": {"pool": "", "example.com/tier": "a_b.c-d"},
     "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "100m", "memory": "100Mi"}}},
    {"name": "huge", "resources": {"requests": {"cpu": "64", "memory": "1Ti"}, "limits": {"cpu": "128", "memory": "2Ti"}}},
    {"name": "x" * 63, "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
]


def table_shapes() -> list[shapes.Shape]:
    return [shape for body in TABLE for shape in shapes.parse_body(body)]


def cr_for(shape: shapes.Shape, cluster_id: int = 7) -> dict:
    """The CR reconcile would apply for a record of this shape (the real code path, unsaved record)."""
    record = InstanceType(cluster_id=cluster_id, name=shape.name, node_selector=shape.node_selector,
                          requests=shape.requests, limits=shape.limits, gpu=shape.gpu)
    return desired_manifest(record)


ALL_SHAPES = seed_shapes() + table_shapes() + [shapes.DEFAULT_SHAPE]


@pytest.mark.parametrize("shape", ALL_SHAPES, ids=[shape.name[:20] for shape in ALL_SHAPES])
def test_every_generated_cr_is_valid_against_the_crd(shape):
    cr = cr_for(shape)
    assert schema_errors(cr, version_schema()) == []
    jsonschema.Draft7Validator(to_jsonschema(version_schema())).validate({"spec": cr["spec"]})
    kept = copy.deepcopy(cr)
    assert prune(kept, version_schema()) == [] and kept == cr  # the server would keep every field we write
    assert cr["apiVersion"] == INSTANCE_TYPE_API_VERSION and cr["kind"] == "InstanceType"
    assert names.dns_subdomain_problem(cr["metadata"]["name"]) is None
    labels = cr["metadata"]["labels"]
    assert labels[MANAGED_BY] == "dockyard" and labels[f"{LABEL_PREFIX}cluster"] == "7"
    assert all(names.label_value_problem(value) is None for value in labels.values())
    limits = cr["spec"]["resources"]["limits"]
    assert limits.get(GPU) == (shape.gpu or None) and GPU not in cr["spec"]["resources"]["requests"]
    assert ("nodeSelector" in cr["spec"]) == bool(shape.node_selector)


def test_the_seed_cr_is_written_back_as_the_seed_has_it():
    (shape,) = shapes.parse_body(yaml.safe_load((DATA / "my_instance_type.yaml").read_text()))
    seed = yaml.safe_load((DATA / "my_instance_type.yaml").read_text())
    assert cr_for(shape)["spec"] == seed["spec"]


@pytest.mark.parametrize("name", SEED_FILES)
def test_the_seed_files_can_be_kubectl_applied_against_our_crd(name):
    document = yaml.safe_load((DATA / name).read_text())
    items = document.get("items") or [document]
    for item in items:
        cr = {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceType", **item}
        assert schema_errors(cr, version_schema()) == []


@pytest.mark.parametrize(("field", "value"), [
    ("requests.cpu", "1 cpu"), ("requests.cpu", "one"), ("requests.memory", "2GB"), ("limits.memory", "1024MiB"),
    ("limits.cpu", "1.2.3"), ("requests.memory", ""),
])
def test_a_quantity_that_breaks_the_pattern_is_rejected_naming_the_field(field, value):
    cr = cr_for(table_shapes()[0])
    section, key = field.split(".")
    cr["spec"]["resources"][section][key] = value
    path = f"spec.resources.{field}"
    errors = schema_errors(cr, version_schema())
    assert [error.field for error in errors] == [path]
    assert f"{path} in body should match '{QUANTITY_PATTERN}'" in str(errors[0])
    (error,) = jsonschema.Draft7Validator(to_jsonschema(version_schema())).iter_errors({"spec": cr["spec"]})
    assert list(error.absolute_path) == ["spec", "resources", section, key] and error.validator == "pattern"


@pytest.mark.parametrize(("value", "problem"), [("2", "integer"), (1.5, "integer"), (-1, "greater than or equal to 0")])
def test_a_gpu_count_that_is_not_a_whole_number_is_rejected(value, problem):
    cr = cr_for(table_shapes()[0])
    cr["spec"]["resources"]["limits"][GPU] = value
    (error,) = schema_errors(cr, version_schema())
    assert error.field == f"spec.resources.limits.{GPU}" and problem in str(error)


def test_manifest_writes_gpus_under_limits_only_and_only_when_there_are_some():
    without = instance_type_manifest(shapes.Shape("t", {}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, 0), cluster_id=1)
    with_gpu = instance_type_manifest(shapes.Shape("t", {}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, 2), cluster_id=1)
    assert without["spec"] == {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert with_gpu["spec"]["resources"]["limits"][GPU] == 2 and "nodeSelector" not in with_gpu["spec"]
