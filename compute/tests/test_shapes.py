"""Table tests of the instance-types seed's rules, as `shapes.parse_body` applies them (pure)."""
import copy
from pathlib import Path

import pytest
import yaml

from compute import shapes
from compute.manifests import INSTANCE_TYPE_API_VERSION
from controlplane.kube.objects import GPU
from controlplane.specs import SpecErrors

DATA = Path(__file__).parent / "data"


def flat(name="t", node_selector=None, requests=None, limits=None, **extra) -> dict:
    body = {"name": name, "resources": {"requests": requests or {"cpu": "1", "memory": "1Gi"},
                                        "limits": limits or {"cpu": "1", "memory": "1Gi"}}, **extra}
    if node_selector is not None:
        body["nodeSelector"] = node_selector
    return body


def cr(name="t", spec=None, **extra) -> dict:
    spec = spec if spec is not None else {k: v for k, v in flat().items() if k != "name"}
    return {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceType", "metadata": {"name": name}, "spec": spec, **extra}


def item(name="t", **spec) -> dict:
    resources = spec.pop("resources", flat()["resources"])
    return {"metadata": {"name": name}, "spec": {"resources": resources, **spec}}


def items(*entries, **extra) -> dict:
    return {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceTypeList", "items": list(entries), **extra}


def errors_of(body, extension=None) -> list[tuple[str, str]]:
    with pytest.raises(SpecErrors) as caught:
        shapes.parse_body(body, extension)
    return caught.value.errors


def paths_of(body, extension=None) -> list[str]:
    return [path for path, _ in errors_of(body, extension)]


_MISSING = object()


def with_resource(section: str, key: str, value) -> dict:
    body = flat()
    if value is _MISSING:
        del body["resources"][section][key]
    else:
        body["resources"][section][key] = value
    return body


# --- the seed's files and the accepted forms ----------------------------------------------------

def test_the_seed_files_are_accepted_as_they_are():
    (single,) = shapes.parse_body(yaml.safe_load((DATA / "my_instance_type.yaml").read_text()))
    assert single == shapes.Shape("myinstancetypename", {"mylabel": "mylabelvalue"}, {"cpu": "700m", "memory": "1500Mi"},
                                  {"cpu": "1", "memory": "2Gi"}, 1)
    listed = shapes.parse_body(yaml.safe_load((DATA / "my_instance_type_list.yaml").read_text()))
    assert listed == [
        shapes.Shape("cpusmall", {}, {"cpu": "100m", "memory": "100Mi"}, {"cpu": "1", "memory": "1Gi"}, 0),
        shapes.Shape("defaultinstancetype", {}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, 0),
    ]


def test_the_flat_the_cr_and_the_list_forms_give_the_same_shape():
    resources = {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "1", "memory": "2Gi", GPU: 1}}
    forms = [
        {"name": "same", "nodeSelector": {"a": "b"}, "resources": resources},
        cr("same", {"nodeSelector": {"a": "b"}, "resources": resources}),
        {"kind": "InstanceType", "metadata": {"name": "same"}, "spec": {"nodeSelector": {"a": "b"}, "resources": resources}},
        items(item("same", nodeSelector={"a": "b"}, resources=resources)),
        {"items": [item("same", nodeSelector={"a": "b"}, resources=resources)]},
    ]
    results = [shapes.parse_body(copy.deepcopy(body)) for body in forms]
    assert all(result == results[0] for result in results) and len(results[0]) == 1


def test_a_cr_may_carry_what_kubectl_output_has():
    body = cr("t")
    body["metadata"].update(labels={"team": "a"}, annotations={"note": "x"}, resourceVersion="12")
    body["status"] = {}
    assert [s.name for s in shapes.parse_body(body)] == ["t"]


def test_the_default_shape_is_the_seeds_yaml():
    assert shapes.DEFAULT_SHAPE.resources() == {"requests": {"cpu": "100m", "memory": "2Gi"},
                                                 "limits": {"cpu": "2", "memory": "2Gi", GPU: None}}


# --- required, non-zero cpu and memory in requests and limits -----------------------------------

@pytest.mark.parametrize("section", ["requests", "limits"])
@pytest.mark.parametrize("key", ["cpu", "memory"])
@pytest.mark.parametrize("value", [_MISSING, None, "", "0", 0, "0m", "0Gi", "-1"])
def test_cpu_and_memory_are_required_and_non_zero(section, key, value):
    if key == "cpu" and value == "0Gi":
        value = "0.0"
    assert paths_of(with_resource(section, key, value)) == [f"resources.{section}.{key}"]


@pytest.mark.parametrize(("body", "path"), [
    ({"name": "t"}, "resources"),
    ({"name": "t", "resources": None}, "resources"),
    ({"name": "t", "resources": "2 cpus"}, "resources"),
    ({"name": "t", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, "resources.requests"),
    ({"name": "t", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}, "resources.limits"),
    ({"name": "t", "resources": {"requests": ["cpu"], "limits": {"cpu": "1", "memory": "1Gi"}}}, "resources.requests"),
])
def test_resources_with_requests_and_limits_are_required(body, path):
    assert paths_of(body) == [path]


# --- cpu: millicores or a number ----------------------------------------------------------------

@pytest.mark.parametrize(("value", "canonical"), [
    ("100m", "100m"), ("700m", "700m"), ("1", "1"), ("1000m", "1"), ("2000m", "2"), ("0.1", "100m"), ("0.5", "500m"),
    ("1.5", "1500m"), (2, "2"), ("1e-3", "1m"), ("+1", "1"),
])
def test_cpu_as_millicores_or_a_number(value, canonical):
    (shape,) = shapes.parse_body(flat(requests={"cpu": value, "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"}))
    assert shape.requests["cpu"] == canonical


@pytest.mark.parametrize(("value", "message"), [
    ("1 cpu", "not a Kubernetes quantity"), ("one", "not a Kubernetes quantity"), (" 1", "not a Kubernetes quantity"),
    ("1_000m", "not a Kubernetes quantity"), ("NaN", "not a Kubernetes quantity"), ("Infinity", "not a Kubernetes quantity"),
    ("0.0001", "finer than a millicore"), ("100u", "finer than a millicore"), (0.5, "not a quantity"),
    (True, "not a quantity"), (["1"], "not a quantity"), ("1e400", "too large"),
])
def test_cpu_that_is_not_millicores_or_a_number_is_refused(value, message):
    ((path, text),) = errors_of(flat(requests={"cpu": value, "memory": "1Gi"}))
    assert path == "resources.requests.cpu" and message in text


# --- memory: a whole number with a suffix -------------------------------------------------------

@pytest.mark.parametrize(("value", "canonical"), [
    ("1500Mi", "1500Mi"), ("1024Mi", "1Gi"), ("2Gi", "2Gi"), ("0.5Gi", "512Mi"), ("1G", "1G"), ("512M", "512M"),
    ("1Ki", "1Ki"), ("1Ti", "1Ti"), ("1e9", "1G"),
])
def test_memory_as_a_number_with_a_suffix(value, canonical):
    (shape,) = shapes.parse_body(flat(requests={"cpu": "1", "memory": value}, limits={"cpu": "1", "memory": "2Ti"}))
    assert shape.requests["memory"] == canonical


@pytest.mark.parametrize(("value", "message"), [
    ("2GB", "not a Kubernetes quantity"), ("1024MiB", "not a Kubernetes quantity"), ("1K", "not a Kubernetes quantity"),
    ("1 Gi", "not a Kubernetes quantity"), ("Gi", "not a Kubernetes quantity"), ("abc", "not a Kubernetes quantity"),
    ("100m", "whole number of bytes"), ("1.5", "whole number of bytes"), (1.5, "not a quantity"),
])
def test_memory_that_is_not_a_number_with_a_suffix_is_refused(value, message):
    ((path, text),) = errors_of(flat(limits={"cpu": "1", "memory": value}))
    assert path == "resources.limits.memory" and message in text


# --- GPUs: an integer, under limits only --------------------------------------------------------

@pytest.mark.parametrize(("value", "count"), [(1, 1), (8, 8), ("2", 2), (0, 0), (None, 0), ("", 0)])
def test_gpus_as_an_integer_under_limits(value, count):
    (shape,) = shapes.parse_body(flat(limits={"cpu": "1", "memory": "1Gi", GPU: value}))
    assert shape.gpu == count and GPU not in shape.limits
    assert shape.resources()["limits"][GPU] == (count or None)


@pytest.mark.parametrize("value", [1.5, "1.5", -1, "-1", True, "one", "1k", " 1", [1]])
def test_gpus_that_are_not_a_whole_number_are_refused(value):
    ((path, text),) = errors_of(flat(limits={"cpu": "1", "memory": "1Gi", GPU: value}))
    assert path == f"resources.limits.{GPU}" and "whole number" in text


@pytest.mark.parametrize("value", [1, 0])
def test_gpus_under_requests_are_refused(value):
    body = flat(requests={"cpu": "1", "memory": "1Gi", GPU: value}, limits={"cpu": "1", "memory": "1Gi", GPU: 1})
    ((path, text),) = errors_of(body)
    assert path == f"resources.requests.{GPU}" and "only be given under limits" in text


@pytest.mark.parametrize(("section", "key"), [("requests", "ephemeral-storage"), ("limits", "amd.com/gpu"),
                                              ("limits", "hugepages-2Mi"), ("requests", "storage")])
def test_other_resources_are_refused(section, key):
    assert paths_of(with_resource(section, key, "1")) == [f"resources.{section}.{key}"]


# --- requests ≤ limits --------------------------------------------------------------------------

@pytest.mark.parametrize(("requests", "limits", "path"), [
    ({"cpu": "2", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, "resources.requests.cpu"),
    ({"cpu": "1001m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, "resources.requests.cpu"),
    ({"cpu": "1", "memory": "2Gi"}, {"cpu": "1", "memory": "1Gi"}, "resources.requests.memory"),
    ({"cpu": "1", "memory": "1025Mi"}, {"cpu": "1", "memory": "1Gi"}, "resources.requests.memory"),
    ({"cpu": "1", "memory": "1G"}, {"cpu": "1", "memory": "900Mi"}, "resources.requests.memory"),  # 10^9 > 900·2^20
])
def test_requests_above_limits_are_refused(requests, limits, path):
    ((found, text),) = errors_of(flat(requests=requests, limits=limits))
    assert found == path and "exceeds its limit" in text


@pytest.mark.parametrize(("requests", "limits"), [
    ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1000m", "memory": "1024Mi"}),
    ({"cpu": "1500m", "memory": "1536Mi"}, {"cpu": "1.5", "memory": "1.5Gi"}),
    ({"cpu": "100m", "memory": "1G"}, {"cpu": "2", "memory": "1Gi"}),
])
def test_requests_equal_to_or_below_limits_in_other_units_are_fine(requests, limits):
    assert len(shapes.parse_body(flat(requests=requests, limits=limits))) == 1


# --- nodeSelector: a map of strings; the extension's selector ------------------------------------

@pytest.mark.parametrize("selector", [
    {}, {"mylabel": "mylabelvalue"}, {"kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "Standard_NC6s_v3"},
    {"pool": ""}, {"a": "x" * 63}, {"nvidia.com/gpu.product": "A100-SXM4-80GB"}, {"k_1.x": "v_1.x-y"},
])
def test_node_selectors_of_label_names_and_string_values(selector):
    (shape,) = shapes.parse_body(flat(node_selector=selector))
    assert shape.node_selector == selector


@pytest.mark.parametrize(("selector", "path"), [
    (["pool=ml"], "nodeSelector"),
    ("pool=ml", "nodeSelector"),
    ({"gpu": True}, "nodeSelector.gpu"),  # unquoted `true` in YAML
    ({"count": 1}, "nodeSelector.count"),
    ({"pool": None}, "nodeSelector.pool"),
    ({"pool": {"a": "b"}}, "nodeSelector.pool"),
    ({"bad key": "x"}, "nodeSelector.bad key"),
    ({"-pool": "x"}, "nodeSelector.-pool"),
    ({"a/b/c": "x"}, "nodeSelector.a/b/c"),
    ({"Example.COM/pool": "x"}, "nodeSelector.Example.COM/pool"),
    ({"pool": "x" * 64}, "nodeSelector.pool"),
    ({"pool": "-ml"}, "nodeSelector.pool"),
    ({"pool": "m l"}, "nodeSelector.pool"),
    # The API server refuses these with 422 (IsQualifiedName); the parser once saved them and the first job failed.
    ({"/gpu": "x"}, "nodeSelector./gpu"),
    ({"a/": "x"}, "nodeSelector.a/"),
    ({"gpu\n": "x"}, "nodeSelector.gpu\n"),
    ({"pool": "ml\n"}, "nodeSelector.pool"),
    ({"a" * 254 + "/gpu": "x"}, "nodeSelector." + "a" * 254 + "/gpu"),
])
def test_node_selectors_that_are_not_maps_of_strings_are_refused(selector, path):
    assert paths_of(flat(node_selector=selector)) == [path]


@pytest.mark.parametrize(("selector", "extension", "conflicts"), [
    ({"pool": "ml"}, {"pool": "ml"}, []),
    ({"zone": "a"}, {"pool": "ml"}, []),
    ({}, {"pool": "ml"}, []),
    ({"pool": "web"}, {"pool": "ml"}, ["nodeSelector.pool"]),
    ({"pool": "web", "zone": "b"}, {"pool": "ml", "zone": "a"}, ["nodeSelector.pool", "nodeSelector.zone"]),
])
def test_the_extension_selector_applies_and_conflicts_are_refused(selector, extension, conflicts):
    if conflicts:
        found = errors_of(flat(node_selector=selector), extension)
        assert [path for path, _ in found] == conflicts
        assert all("extension nodeSelector" in text for _, text in found)
        return
    (shape,) = shapes.parse_body(flat(node_selector=selector), extension)
    assert shape.node_selector == selector  # stored as written; the extension's part is added when used
    assert shape.on(extension).selector == {**extension, **selector}


def test_an_extension_conflict_inside_a_list_names_the_item():
    body = items(item("a", nodeSelector={"pool": "ml"}), item("b", nodeSelector={"pool": "web"}))
    assert paths_of(body, {"pool": "ml"}) == ["items.1.spec.nodeSelector.pool"]


# --- names --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "cpusmall", "gpu-small", "a.b-c", "defaultinstancetype", "x" * 253, "1gpu"])
def test_names_are_dns_subdomains(name):
    assert shapes.parse_body(flat(name=name))[0].name == name


@pytest.mark.parametrize("name", ["", None, 5, "GPU", "a_b", "-a", "a-", "a..b", "x" * 254, "a b", "a/b"])
def test_names_that_are_not_dns_subdomains_are_refused(name):
    assert paths_of(flat(name=name)) == ["name"]
    assert paths_of(cr(name=name)) == ["metadata.name"]


# --- InstanceTypeList: all or nothing -----------------------------------------------------------

def test_a_list_is_all_or_nothing_and_every_problem_is_named():
    body = items(item("good"), item("bad-cpu", resources={"requests": {"cpu": "0", "memory": "1Gi"},
                                                           "limits": {"cpu": "1", "memory": "1Gi"}}),
                 item("BadName"))
    assert paths_of(body) == ["items.1.spec.resources.requests.cpu", "items.2.metadata.name"]


@pytest.mark.parametrize("names", [["a", "a"], ["a", "b", "a"], ["defaultinstancetype", "defaultinstancetype"]])
def test_duplicate_names_in_a_list_are_refused(names):
    found = errors_of(items(*[item(name) for name in names]))
    assert found == [("items", f"'{names[0]}' appears more than once.")]


@pytest.mark.parametrize(("body", "path"), [
    (items(), "items"),
    ({"kind": "InstanceTypeList"}, "items"),
    ({"kind": "InstanceTypeList", "items": {"a": item()}}, "items"),
    ({"kind": "InstanceTypeList", "items": None}, "items"),
    (items(item("a"), "b"), "items.1"),
    (items(item("a"), ["b"]), "items.1"),
])
def test_a_list_needs_a_non_empty_list_of_mappings(body, path):
    assert paths_of(body) == [path]


def test_a_list_of_many_is_accepted_in_order():
    names = [f"t{index}" for index in range(100)]
    assert [shape.name for shape in shapes.parse_body(items(*[item(name) for name in names]))] == names


# --- kinds, versions and unknown fields ---------------------------------------------------------

@pytest.mark.parametrize(("body", "path"), [
    ({**cr(), "kind": "Pod"}, "kind"),
    ({**cr(), "apiVersion": "v1"}, "apiVersion"),
    ({**cr(), "apiVersion": "amlarc.azureml.com/v1"}, "apiVersion"),
    ({**items(item()), "apiVersion": "v1"}, "apiVersion"),
    (items({**item(), "kind": "Pod"}), "items.0.kind"),
    (items({**item(), "apiVersion": "v1", "kind": "ConfigMap"}), "items.0.apiVersion"),
    (items({**item(), "apiVersion": "amlarc.azureml.com/v2"}), "items.0.apiVersion"),
    (items({**item(), "kind": "InstanceTypeList"}), "items.0.kind"),
])
def test_other_kinds_and_versions_are_refused(body, path):
    assert path in paths_of(body)


@pytest.mark.parametrize(("body", "paths"), [
    (flat(gpus=1), ["gpus"]),
    (flat(nodeselector={"a": "b"}), ["nodeselector"]),
    (flat(tolerations=[]), ["tolerations"]),
    ({**flat(), "resources": {**flat()["resources"], "claims": []}}, ["resources.claims"]),
    (cr(spec={"resources": flat()["resources"], "replicas": 2}), ["spec.replicas"]),
    (cr(extra=1), ["extra"]),
    ({**cr(), "specs": {}}, ["specs"]),
    (items({**item(), "extra": 1}), ["items.0.extra"]),
    (items({"metadata": {"name": "a"}, "spec": {"resources": flat()["resources"], "tolerations": []}}),
     ["items.0.spec.tolerations"]),
])
def test_unknown_fields_are_refused_with_their_path(body, paths):
    assert paths_of(body) == paths


@pytest.mark.parametrize(("body", "path"), [
    ([], ""), ("name: t", ""), (None, ""), ({**cr(), "metadata": "t"}, "metadata"), ({**cr(), "spec": ["a"]}, "spec"),
])
def test_bodies_that_are_not_mappings_are_refused(body, path):
    assert paths_of(body) == [path]


def test_every_problem_of_a_body_is_reported_at_once():
    body = {"name": "Bad_Name", "nodeSelector": {"pool": 1}, "extra": True,
            "resources": {"requests": {"cpu": "0", "memory": "1GB", GPU: 1}, "limits": {"cpu": "1", GPU: "x"}}}
    assert sorted(paths_of(body)) == sorted([
        "extra", "name", "nodeSelector.pool", f"resources.requests.{GPU}", "resources.requests.cpu",
        "resources.requests.memory", "resources.limits.memory", f"resources.limits.{GPU}",
    ])
