"""Hostile bodies against every create route: each answers 4xx in the error shape and writes nothing.

Issue 9, items 4 and 9: a 439-byte YAML alias bomb took 72 s and 710 MB of a web worker and stored an 80 MB spec;
bodies over 2.5 MB, deep nesting, NUL or lone surrogates answered 500; free text had no length limit.
"""
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assets.models import Data, Environment, Model
from assets.specs import snapshots
from assets.tests.support import sha, targz
from compute.manifests import INSTANCE_TYPE_API_VERSION
from compute.models import ComputeTarget, InstanceType
from compute.services import compute_create
from compute.tests.factories import VALID_BODIES, as_checked, body, kubeconfig
from controlplane import specs
from endpoints.models import OnlineDeployment, OnlineEndpoint
from jobs.models import Job
from tests.support import assert_error
from workspaces.models import ApiToken, AuditEvent, Membership, Workspace

WS = "/api/v1/workspaces/team-a"
EP = f"{WS}/online-endpoints"
ADDER = Path(__file__).resolve().parent.parent / "endpoints" / "tests" / "data" / "adder"
SHAPE = {"name": "small", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
# `prepared` attaches k8s; the route's own attachment is another cluster, so that it is a create and not a conflict
OTHER_K8S = body("kubernetes", name="k8s-two", kubeconfig=kubeconfig(server="https://10.0.0.2:6443"))
DEPLOYMENT = {"name": "green", "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"}}
UPLOADED = {"model.pkl": b"weights"}  # `prepared` uploads it: the model's and data's path
UPLOAD = f"azureml://uploads/{snapshots.snapshot_id([snapshots.Entry('model.pkl', sha(b'weights'), 0o644)])}"
ASSET_TEXT = ("description", "tags")


@dataclass
class Route:
    name: str
    path: str
    valid: dict
    free_text: tuple = ()  # fields a person writes freely: each has a length limit
    needs: tuple = field(default=())


ROUTES = [
    Route("workspaces", "/api/v1/workspaces/", {"name": "new-team"}, ("display_name", "description", "tags")),
    *[Route(f"computes-{kind}", f"{WS}/computes/", OTHER_K8S if kind == "kubernetes" else body(kind), ("description", "tags"))
      for kind in VALID_BODIES],
    Route("instancetypes", f"{WS}/computes/k8s/instancetypes/", SHAPE, needs=("kubernetes",)),
    Route("instancetypelist", f"{WS}/computes/k8s/instancetypes/",
          {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceTypeList", "items": [SHAPE]}, needs=("kubernetes",)),
    Route("jobs", f"{WS}/jobs/", {"name": "train", "command": "echo hi", "environment": {"image": "python:3.11"}},
          ("display_name", "description", "experiment_name", "command", "tags", "properties")),
    Route("online-endpoints", f"{EP}/", {"name": "new-ep", "compute": "local"}, ("description", "tags")),
    Route("deployments", f"{EP}/adder/deployments/", DEPLOYMENT, ("description", "tags"), needs=("endpoint",)),
    Route("environments", f"{WS}/environments/", {"name": "env", "version": "1", "image": "python:3.11",
                                                  "conda_file": {"dependencies": ["python=3.11"]}}, ASSET_TEXT),
    Route("models", f"{WS}/models/", {"name": "model", "version": 1, "path": UPLOAD}, ASSET_TEXT),
    Route("data", f"{WS}/data/", {"name": "iris", "version": "1", "path": UPLOAD}, ASSET_TEXT),
    Route("members", f"{WS}/members/", {"user": "nina", "role": "reader"}),
    Route("tokens", "/api/v1/tokens/", {"name": "ci"}),
]
IDS = [route.name for route in ROUTES]


@pytest.fixture
def prepared(owner, workspace, make_user, settings):
    """What the routes need (a kubernetes compute, an endpoint, an upload), and the owner's client."""
    from assets.services import upload_create
    from conftest import client_for
    from endpoints.services import endpoint_create

    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    make_user("nina")
    as_checked(compute_create(user=owner, workspace=workspace, data=body("kubernetes", name="k8s")))
    endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})
    upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz(UPLOADED)), content_type="application/gzip")
    return client_for(owner)


def counts() -> tuple:
    models = (Workspace, Membership, ApiToken, ComputeTarget, InstanceType, Job, OnlineEndpoint, OnlineDeployment, AuditEvent,
              Environment, Model, Data)
    return tuple(model.objects.count() for model in models)


def post_raw(client, path: str, raw: bytes | str, content_type: str = "application/json"):
    return client.generic("POST", path, raw.encode() if isinstance(raw, str) else raw, content_type=content_type)


def alias_bomb(base: dict) -> str:
    """The issue's bomb: nine levels of anchors, each alias nine times the one before, in a stored-as-given field."""
    import yaml

    lines = [yaml.safe_dump(base, sort_keys=False).rstrip(), "properties:", "  a: &a [x,x,x,x,x,x,x,x,x]"]
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"  {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_the_valid_bodies_are_accepted(route, prepared):
    """Each attack below starts from this body: refused for the attack, not for being wrong to begin with."""
    assert prepared.post(route.path, route.valid, format="json").status_code == 201


def test_the_bomb_is_the_issues_size():
    assert len(alias_bomb({"command": "echo hi"})) < 450


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_yaml_alias_bomb_is_refused_at_its_first_anchor(route, prepared):
    before = counts()
    response = post_raw(prepared, route.path, alias_bomb(route.valid), "application/yaml")
    error = assert_error(response, 400, "ValidationError", target="")
    assert "anchors and aliases are not accepted" in error["message"] and "line" in error["message"]
    assert counts() == before


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_single_anchor_is_refused_too(route, prepared):
    """No budget to tune: YAML that Dockyard reads has no anchors at all (merge keys `<<: *x` need them)."""
    import yaml

    text = yaml.safe_dump(route.valid, sort_keys=False).replace("\n", " # x\n", 1) + "extra: &x 1\n"
    assert_error(post_raw(prepared, route.path, text, "application/yaml"), 400, "ValidationError", target="")


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_3_mb_body_is_413_before_it_is_read(route, prepared):
    before = counts()
    raw = json.dumps({**route.valid, "description": "d" * 3_000_000})
    assert_error(post_raw(prepared, route.path, raw), 413, "PayloadTooLarge")
    assert_error(post_raw(prepared, route.path, raw.replace('"description"', '"x"'), "application/yaml"), 413, "PayloadTooLarge")
    assert counts() == before


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_body_past_the_limit_without_content_length_is_413(route, prepared, settings):
    """The parser counts too: a stream may say less than it sends."""
    from controlplane.parsers import JSONParser, PayloadTooLarge

    settings.DOCKYARD_MAX_BODY_BYTES = 1000
    with pytest.raises(PayloadTooLarge):
        JSONParser().parse(__import__("io").BytesIO(json.dumps({**route.valid, "x": "y" * 2000}).encode()))


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_10000_deep_nesting_is_400(route, syntax, prepared):
    before = counts()
    deep = "[" * 10000 + "]" * 10000
    head = json.dumps(route.valid)[:-1]
    raw = f'{head}, "tags": {deep}}}'
    response = post_raw(prepared, route.path, raw, "application/json" if syntax == "json" else "application/yaml")
    error = assert_error(response, 400, "ValidationError")
    assert "nested deeper than 32" in error["message"]
    assert counts() == before


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_33_levels_are_refused_and_32_are_not_a_parse_error(route, prepared):
    from controlplane.parsers import UnsafeValue, check_values

    def nested(levels):  # `levels` mappings inside each other
        value = "leaf"
        for _ in range(levels):
            value = {"k": value}
        return value

    check_values(nested(32))
    with pytest.raises(UnsafeValue):
        check_values(nested(33))
    response = prepared.post(route.path, {**route.valid, "tags": nested(32)}, format="json")  # 33 with the body
    assert_error(response, 400, "InvalidBody", target="tags" + ".k" * 31)


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
@pytest.mark.parametrize("where, target", [("name", "name"), ("nested", "properties.x.0")])
@pytest.mark.parametrize("bad", ["a\\u0000b", "\\ud800"], ids=["nul", "lone-surrogate"])
def test_nul_and_lone_surrogates_are_400_naming_the_field(route, where, target, bad, prepared):
    before = counts()
    key = "user" if route.name == "members" and where == "name" else "name"
    data = json.dumps(route.valid)
    if where == "name":
        raw = data.replace(f'"{key}": "', f'"{key}": "{bad}', 1) if f'"{key}"' in data else data[:-1] + f', "name": "{bad}"}}'
        target = "items.0.name" if route.name == "instancetypelist" else key
    else:
        raw = data[:-1] + f', "properties": {{"x": ["{bad}"]}}}}'
    error = assert_error(post_raw(prepared, route.path, raw), 400, "InvalidBody", target=target)
    assert ("NUL" in error["message"]) or ("surrogate" in error["message"])
    assert counts() == before


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_nul_in_a_key_is_400(route, prepared):
    raw = json.dumps(route.valid)[:-1] + ', "tags": {"a\\u0000b": "c"}}'
    error = assert_error(post_raw(prepared, route.path, raw), 400, "InvalidBody", target="tags.a\\x00b")
    assert "key" in error["message"].lower()


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_yaml_escapes_for_nul_are_400_too(route, prepared):
    import yaml

    text = yaml.safe_dump(route.valid, sort_keys=False) + 'properties: {x: "a\\0b"}\n'
    assert_error(post_raw(prepared, route.path, text, "application/yaml"), 400, "InvalidBody", target="properties.x")


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/../../b", "..", "."])
def test_path_escapes_in_names_are_400(route, name, prepared):
    if route.name == "tokens":
        pytest.skip("a token's name is a label, never a path (it is not in any URL or file name)")
    before = counts()
    key = "user" if route.name == "members" else "name"
    data = {**route.valid, key: name}
    if route.name == "instancetypelist":
        data = {**route.valid, "items": [{**SHAPE, "name": name}]}
    response = prepared.post(route.path, data, format="json")
    assert 400 <= response.status_code < 500, response.content
    assert_error(response, response.status_code, response.json()["error"]["code"])
    assert counts() == before


@pytest.mark.parametrize("code_configuration", [
    {"code": str(ADDER), "scoring_script": "../../../../../../etc/passwd"},
    {"code": str(ADDER), "scoring_script": "/etc/passwd"},
])
def test_deployments_refuse_code_paths_that_leave_their_folder(code_configuration, prepared):
    before = counts()
    response = prepared.post(f"{EP}/adder/deployments/", {**DEPLOYMENT, "code_configuration": code_configuration}, format="json")
    assert 400 <= response.status_code < 500, response.content
    assert_error(response, response.status_code, response.json()["error"]["code"])
    assert counts() == before


def over_limit(route: Route, field_name: str):
    """A value just past the field's limit (tags: one tag value past it)."""
    if field_name == "tags":
        return {"k": "v" * (specs.MAX_TAG_VALUE + 1)}
    if field_name == "properties":
        return {"x": "p" * (specs.MAX_TEXT + 1)}
    limit = {"workspaces": {"display_name": 200}, **{r.name: {"description": 2000} for r in ROUTES if r.name.startswith("computes-")}}
    return "t" * (limit.get(route.name, {}).get(field_name, specs.TEXT_FIELDS[field_name]) + 1)


FREE_TEXT = [(route, name) for route in ROUTES for name in route.free_text]


@pytest.mark.parametrize("route, field_name", FREE_TEXT, ids=[f"{route.name}-{name}" for route, name in FREE_TEXT])
def test_free_text_past_its_limit_is_400_naming_the_field(route, field_name, prepared):
    before = counts()
    response = prepared.post(route.path, {**route.valid, field_name: over_limit(route, field_name)}, format="json")
    error = assert_error(response, 400, response.json()["error"]["code"])
    assert any(detail["target"].split(".")[0] == field_name for detail in error["details"]), error
    assert counts() == before


@pytest.mark.parametrize("route", [route for route in ROUTES if "tags" in route.free_text], ids=lambda route: route.name)
def test_too_many_tags_and_long_tag_names_are_400(route, prepared):
    for tags in ({f"t{index}": "v" for index in range(specs.MAX_TAGS + 1)}, {"k" * (specs.MAX_TAG_KEY + 1): "v"}):
        response = prepared.post(route.path, {**route.valid, "tags": tags}, format="json")
        assert_error(response, 400, response.json()["error"]["code"])
    assert prepared.post(route.path, {**route.valid, "tags": {"k" * specs.MAX_TAG_KEY: "v" * specs.MAX_TAG_VALUE}},
                         format="json").status_code == 201


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_one_huge_string_anywhere_is_400(route, prepared):
    """Past DOCKYARD_MAX_STRING_CHARS (256 Ki characters) in any field, known or not, before any rule runs."""
    response = prepared.post(route.path, {**route.valid, "anything": "s" * (256 * 1024 + 1)}, format="json")
    assert_error(response, 400, "InvalidBody", target="anything")


def test_a_stored_job_spec_has_a_total_size_cap(prepared):
    before = counts()
    properties = {f"p{index}": "v" * 60_000 for index in range(5)}  # each string fine, 300 kB in all
    job = {"command": "echo", "environment": {"image": "python:3.11"}, "properties": properties}
    response = prepared.post(f"{WS}/jobs/", job, format="json")
    error = assert_error(response, 400, response.json()["error"]["code"], target="")
    assert f"at most {specs.MAX_SPEC_BYTES}" in error["message"]
    assert counts() == before


def test_a_legit_body_near_the_limit_is_accepted(prepared):
    properties = {f"p{index}": "v" * 50_000 for index in range(4)}  # 200 kB: under every limit
    job = {"command": "echo", "environment": {"image": "python:3.11"}, "properties": properties}
    assert prepared.post(f"{WS}/jobs/", job, format="json").status_code == 201


def test_form_bodies_get_the_same_character_rules(prepared):
    response = prepared.post("/api/v1/tokens/", "name=a%00b", content_type="application/x-www-form-urlencoded")
    assert_error(response, 400, "InvalidBody", target="name.0")
    assert ApiToken.objects.filter(name__startswith="a").count() == 0


def test_an_oversized_form_body_is_413_in_the_error_shape(prepared):
    response = prepared.post("/api/v1/tokens/", "name=" + "a" * 3_000_000, content_type="application/x-www-form-urlencoded")
    assert_error(response, 413, "PayloadTooLarge")


def test_a_content_length_that_is_no_number_is_400(prepared):
    response = prepared.generic("POST", "/api/v1/tokens/", b"{}", content_type="application/json", CONTENT_LENGTH="lots")
    assert_error(response, 400, "ValidationError")
