"""REST conventions every endpoint shares: ETag / If-Match, errors, lists and pagination, YAML, throttling, audit."""
import pytest
from django.core.cache import cache
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from compute.models import ComputeTarget
from compute.tests.factories import VALID_BODIES, body, create_compute, host
from tests.support import assert_error
from workspaces.models import AuditEvent, Membership, Workspace
from workspaces.tests.factories import AuditEventFactory, MembershipFactory

WS = "/api/v1/workspaces/team-a"


# ETag and If-Match


@pytest.fixture
def cluster(workspace, owner):
    return create_compute(workspace, owner, name="cpu-cluster", max_instances=2)


SINGLE_GETS = [f"{WS}/", f"{WS}/members/olivia/", f"{WS}/computes/cpu-cluster/", f"{WS}/computes/local/"]


@pytest.mark.parametrize("path", SINGLE_GETS)
def test_every_single_get_has_an_etag_that_changes_with_the_resource(path, owner_api, cluster, local_compute):
    first, again = owner_api.get(path), owner_api.get(path)
    assert first.status_code == 200
    assert first["ETag"].startswith('"') and first["ETag"].endswith('"') and len(first["ETag"]) > 10
    assert again["ETag"] == first["ETag"]


@pytest.mark.parametrize("compute_type", list(VALID_BODIES))
def test_every_compute_type_has_an_etag(compute_type, owner_api, workspace, owner):
    create_compute(workspace, owner, compute_type, name="target")
    assert owner_api.get(f"{WS}/computes/target/")["ETag"]


def state() -> tuple:
    return (
        list(Workspace.objects.values()), list(Membership.objects.values()), list(ComputeTarget.objects.values()),
        AuditEvent.objects.count(),
    )


# (the resource, its PATCH body, what a successful DELETE answers)
WRITABLE = [
    pytest.param(f"{WS}/computes/cpu-cluster/", {"max_instances": 5}, 202, id="compute"),
    pytest.param(f"{WS}/members/reader-user/", {"role": "contributor"}, 204, id="member"),
    pytest.param(f"{WS}/", {"description": "changed"}, 204, id="workspace"),
]


@pytest.mark.parametrize("path, patch, deleted", WRITABLE)
@pytest.mark.parametrize("method", ["patch", "delete"])
def test_stale_if_match_is_refused_and_changes_nothing(method, path, patch, deleted, owner_api, users, workspace):
    if "computes" in path:
        create_compute(workspace, users["owner"], name="cpu-cluster")
    stale = owner_api.get(path)["ETag"]
    if "computes" in path:
        owner_api.patch(path, {"description": "someone else was here"}, format="json")
    else:
        owner_api.patch(f"{WS}/", {"display_name": "someone else was here"}, format="json")
    if path.endswith("/members/reader-user/"):
        Membership.objects.filter(user__username="reader-user").update(role="owner")
    before = state()
    response = getattr(owner_api, method)(path, patch if method == "patch" else None, format="json", HTTP_IF_MATCH=stale)
    assert_error(response, 412, "PreconditionFailed")
    assert state() == before


@pytest.mark.parametrize("path, patch, deleted", WRITABLE)
@pytest.mark.parametrize("if_match", ["current", "weak", "one-of-several", "*"])
def test_matching_if_match_lets_the_patch_through(if_match, path, patch, deleted, owner_api, users, workspace):
    if "computes" in path:
        create_compute(workspace, users["owner"], name="cpu-cluster")
    etag = owner_api.get(path)["ETag"]
    header = {"current": etag, "weak": f"W/{etag}", "one-of-several": f'"0000", {etag}', "*": "*"}[if_match]
    response = owner_api.patch(path, patch, format="json", HTTP_IF_MATCH=header)
    assert response.status_code == 200, response.json()
    assert response["ETag"] == owner_api.get(path)["ETag"] != etag


@pytest.mark.parametrize("path, patch, deleted", WRITABLE)
def test_matching_if_match_lets_the_delete_through(path, patch, deleted, owner_api, users, workspace):
    if "computes" in path:
        create_compute(workspace, users["owner"], name="cpu-cluster")
    etag = owner_api.get(path)["ETag"]
    assert owner_api.delete(path, HTTP_IF_MATCH=etag).status_code == deleted


def test_etag_depends_on_who_asks_when_the_body_does(api_as, users, workspace):
    """A workspace shows the caller's role, so two roles see two versions."""
    assert api_as("reader").get(f"{WS}/")["ETag"] != api_as("owner").get(f"{WS}/")["ETag"]


# errors


@pytest.mark.parametrize(
    "path",
    ["/api/v1/nope/", "/api/v1/workspaces/team-a/nope/", "/api/v2/workspaces/", "/api/", "/api/v1/workspaces/team-a/computes/a/b/c/"],
)
def test_unknown_api_paths_are_404_in_the_error_shape(path, owner_api, workspace):
    response = owner_api.get(path)
    assert response["Content-Type"].startswith("application/json")
    assert_error(response, 404, "NotFound")


@pytest.mark.parametrize(
    "method, path",
    [
        ("put", f"{WS}/"),
        ("put", f"{WS}/computes/cpu-cluster/"),
        ("post", f"{WS}/computes/cpu-cluster/"),
        ("delete", "/api/v1/workspaces/"),
        ("patch", f"{WS}/computes/"),
        ("post", f"{WS}/events/"),
        ("put", f"{WS}/members/olivia/"),
        ("post", "/api/v1/vm-sizes/"),
        ("delete", "/api/v1/compute-types/"),
        ("get", "/api/v1/tokens/1/"),
        ("patch", "/api/v1/tokens/1/"),
    ],
)
def test_wrong_methods_are_405_in_the_error_shape(method, path, owner_api, cluster):
    assert_error(getattr(owner_api, method)(path, {}, format="json"), 405, "MethodNotAllowed")


def test_an_unsupported_media_type_is_415_in_the_error_shape(owner_api, workspace):
    response = owner_api.post(f"{WS}/computes/", b"name=x", content_type="text/csv")
    assert_error(response, 415, "UnsupportedMediaType")


def test_a_server_error_shows_neither_a_stack_trace_nor_its_message(owner_api, workspace, monkeypatch):
    import compute.selectors

    def broken(**kwargs):
        raise RuntimeError("password=SECRET-in-an-exception")

    monkeypatch.setattr(compute.selectors, "compute_list", broken)
    response = owner_api.get(f"{WS}/computes/")
    assert_error(response, 500, "InternalServerError")
    text = response.content.decode()
    assert "SECRET" not in text and "Traceback" not in text and "RuntimeError" not in text


# lists


@pytest.mark.parametrize(
    "path",
    ["/api/v1/workspaces/", f"{WS}/members/", f"{WS}/events/", f"{WS}/computes/", "/api/v1/tokens/", "/api/v1/vm-sizes/", "/api/v1/compute-types/"],
)
def test_every_list_has_the_same_shape(path, owner_api, cluster):
    response = owner_api.get(path)
    assert response.status_code == 200
    page = response.json()
    assert list(page) == ["count", "next", "previous", "results"]
    assert page["count"] == len(page["results"]) > 0
    assert page["next"] is page["previous"] is None


def test_page_numbers_and_page_size(owner_api, local_compute, owner):
    for index in range(7):
        create_compute(local_compute, owner, "computeinstance", name=f"c{index}", kubernetes_compute="local")
    first = owner_api.get(f"{WS}/computes/", {"page_size": 3}).json()
    assert (first["count"], [row["name"] for row in first["results"]], first["previous"]) == (7, ["c0", "c1", "c2"], None)
    assert "page=2" in first["next"] and "page_size=3" in first["next"]
    last = owner_api.get(f"{WS}/computes/", {"page_size": 3, "page": 3}).json()
    assert ([row["name"] for row in last["results"]], last["next"]) == (["c6"], None)
    assert "page=2" in last["previous"]
    assert len(owner_api.get(f"{WS}/computes/").json()["results"]) == 7  # default page size 50


def test_page_size_is_capped(owner_api, workspace, owner):
    AuditEventFactory.create_batch(501, workspace=workspace)
    response = owner_api.get(f"{WS}/events/", {"page_size": 10000})
    assert len(response.json()["results"]) == 500


def test_a_page_past_the_end_is_404(owner_api, cluster):
    assert_error(owner_api.get(f"{WS}/computes/", {"page": 9}), 404, "NotFound")


def test_events_use_cursor_pages_that_are_stable_under_inserts(owner_api, workspace):
    AuditEventFactory.create_batch(7, workspace=workspace)
    total = AuditEvent.objects.filter(workspace=workspace).count()
    first = owner_api.get(f"{WS}/events/", {"page_size": 3}).json()
    assert first["count"] == total and len(first["results"]) == 3 and first["previous"] is None
    assert "cursor=" in first["next"] and "page=" not in first["next"]
    AuditEventFactory(workspace=workspace, target_name="newest")  # lands before the first page: no shift
    seen = [row["id"] for row in first["results"]]
    page = first
    while page["next"]:
        page = owner_api.get(page["next"]).json()
        seen += [row["id"] for row in page["results"]]
    assert len(seen) == len(set(seen)) == total
    assert seen == sorted(seen, reverse=True)  # newest first
    back = owner_api.get(page["previous"]).json()
    assert back["results"] and "cursor=" in page["previous"]


def test_events_can_be_filtered(owner_api, users, workspace):
    owner_api.patch(f"{WS}/members/reader-user/", {"role": "contributor"}, format="json")
    rows = owner_api.get(f"{WS}/events/", {"target_type": "member", "action": "update"}).json()["results"]
    assert [(row["target_name"], row["changes"]) for row in rows] == [("reader-user", {"role": ["reader", "contributor"]})]
    assert owner_api.get(f"{WS}/events/", {"target_name": "nobody"}).json()["count"] == 0


def test_events_of_other_workspaces_are_not_listed(owner_api, workspace):
    other = MembershipFactory(role="owner").workspace
    AuditEventFactory(workspace=other, target_name="elsewhere")
    names = [row["target_name"] for row in owner_api.get(f"{WS}/events/").json()["results"]]
    assert "elsewhere" not in names


# YAML bodies


def test_yaml_create_and_patch_of_a_compute(owner_api, workspace):
    host(workspace)  # the kubernetes compute the compute cluster lives on
    created = owner_api.post(
        f"{WS}/computes/", "name: gpu\ntype: amlcompute\nsize: Standard_NC6s_v3\nmax_instances: 2\n", content_type="application/yaml"
    )
    assert created.status_code == 201, created.json()
    assert created["Content-Type"].startswith("application/json")
    patched = owner_api.patch(f"{WS}/computes/gpu/", "min_instances: 1\n", content_type="application/yaml")
    assert patched.status_code == 200, patched.json()
    assert (patched.json()["min_instances"], patched.json()["max_instances"], patched.json()["size"]) == (1, 2, "Standard_NC6s_v3")


def test_yaml_and_json_bodies_make_the_same_record(owner_api, workspace):
    import yaml

    data = body("computeinstance", schedules={"compute_start_stop": [{"action": "start", "trigger": {"type": "cron", "expression": "0 8 * * 1-5"}}]})
    from_json = owner_api.post(f"{WS}/computes/", data, format="json").json()
    owner_api.delete(f"{WS}/computes/notebook/")
    ComputeTarget.objects.all().delete()
    from_yaml = owner_api.post(f"{WS}/computes/", yaml.safe_dump(data), content_type="application/yaml").json()
    ignore = {"created_on", "updated_on"}
    assert {k: v for k, v in from_yaml.items() if k not in ignore} == {k: v for k, v in from_json.items() if k not in ignore}


# throttling


@pytest.fixture
def low_rates(monkeypatch):
    """DRF reads the rates into a class attribute at import, so override that, and start from an empty count."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "1/min", "user": "3/min"})
    cache.clear()
    yield
    cache.clear()


def test_too_many_requests_is_429_with_retry_after(owner_api, workspace, low_rates):
    for _ in range(3):
        assert owner_api.get("/api/v1/vm-sizes/").status_code == 200
    response = owner_api.get("/api/v1/vm-sizes/")
    error = assert_error(response, 429, "TooManyRequests")
    assert 0 < int(response["Retry-After"]) <= 60
    assert "retry in" in error["message"]


def test_the_user_rate_is_per_user(owner_api, api_as, users, low_rates):
    for _ in range(4):
        owner_api.get("/api/v1/tokens/")
    assert owner_api.get("/api/v1/tokens/").status_code == 429
    assert api_as("reader").get("/api/v1/tokens/").status_code == 200


def test_anonymous_requests_have_their_own_rate(db, low_rates):
    anonymous = APIClient()
    assert anonymous.get("/api/v1/openapi.json").status_code == 200
    response = anonymous.get("/api/v1/openapi.json")
    assert_error(response, 429, "TooManyRequests")
    assert int(response["Retry-After"]) > 0


# audit


def test_every_change_is_in_the_events_with_what_changed(owner_api, users, workspace, make_user):
    make_user("nina")
    owner_api.patch(f"{WS}/", {"description": "ML team"}, format="json")
    owner_api.post(f"{WS}/members/", {"user": "nina", "role": "reader"}, format="json")
    owner_api.patch(f"{WS}/members/nina/", {"role": "owner"}, format="json")
    owner_api.delete(f"{WS}/members/nina/")
    host(workspace)
    owner_api.post(f"{WS}/computes/", body("amlcompute", max_instances=2), format="json")
    owner_api.patch(f"{WS}/computes/cpu-cluster/", {"max_instances": 3, "tags": {"cost": "low"}}, format="json")
    owner_api.delete(f"{WS}/computes/cpu-cluster/")
    rows = owner_api.get(f"{WS}/events/").json()["results"]
    seen = [(row["action"], row["target_type"], row["target_name"], row["changes"]) for row in rows if row["actor"] == "olivia"]
    assert seen[:7] == [
        ("delete", "compute", "cpu-cluster", {}),
        ("update", "compute", "cpu-cluster", {"max_instances": [2, 3], "tags": [{}, {"cost": "low"}]}),
        ("create", "compute", "cpu-cluster", {
            "type": [None, "amlcompute"], "size": [None, "Standard_DS3_v2"], "tier": [None, "dedicated"],
            "min_instances": [None, 0], "max_instances": [None, 2], "idle_time_before_scale_down": [None, 120],
            "kubernetes_compute": [None, "k8s"],
        }),
        ("delete", "member", "nina", {"role": ["owner", None]}),
        ("update", "member", "nina", {"role": ["reader", "owner"]}),
        ("create", "member", "nina", {"role": [None, "reader"]}),
        ("update", "workspace", "team-a", {"description": ["", "ML team"]}),
    ]
    assert all(row["created_at"] for row in rows)
