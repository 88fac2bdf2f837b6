"""PATCH of a job changes its display fields only (display_name, description, tags), recorded, guarded by If-Match."""
import pytest

from jobs.models import Job
from jobs.tests.support import IMAGE, URL, counts, submit
from tests.support import assert_error
from workspaces.models import AuditEvent

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


# edit: display fields only


def test_patch_changes_display_fields_and_records_them(owner_api, workspace):
    submit(owner_api, name="edit-me", tags={"a": "1"})
    response = owner_api.patch(f"{URL}edit-me/", {"display_name": "Nicer", "description": "why", "tags": {"b": 2}}, format="json")
    assert response.status_code == 200, response.json()
    job = response.json()
    assert (job["display_name"], job["description"], job["tags"]) == ("Nicer", "why", {"b": "2"})
    assert response["ETag"] == owner_api.get(f"{URL}edit-me/")["ETag"]
    stored = Job.objects.get(name="edit-me")
    assert (stored.display_name, stored.description, stored.tags) == ("Nicer", "why", {"b": "2"})
    assert (stored.spec["display_name"], stored.spec["tags"]) == ("Nicer", {"b": "2"})
    assert stored.generation == 1  # nothing for reconcile to do
    event = AuditEvent.objects.get(action="update", target_type="job")
    assert event.changes == {"display_name": ["edit-me", "Nicer"], "description": ["", "why"], "tags": [{"a": "1"}, {"b": "2"}]}


def test_patch_tags_follow_the_submit_rules(owner_api, workspace):
    submit(owner_api, name="edit-me")
    response = owner_api.patch(f"{URL}edit-me/", {"tags": {"n": 1, "ok": True, "lr": 0.5}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["tags"] == {"n": "1", "ok": "true", "lr": "0.5"}
    assert owner_api.patch(f"{URL}edit-me/", {"tags": {}}, format="json").json()["tags"] == {}


def test_patch_in_yaml(owner_api, workspace):
    submit(owner_api, name="edit-me")
    response = owner_api.patch(f"{URL}edit-me/", "display_name: From YAML\ntags:\n  cost: low\n", content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert (response.json()["display_name"], response.json()["tags"]) == ("From YAML", {"cost": "low"})


def test_patch_that_changes_nothing_records_nothing(owner_api, workspace):
    submit(owner_api, name="same", display_name="Same")
    before = counts()
    response = owner_api.patch(f"{URL}same/", {"display_name": "Same", "name": "same", "command": "echo hi"}, format="json")
    assert response.status_code == 200, response.json()
    assert counts() == before


@pytest.mark.parametrize(
    "patch, target",
    [
        ({"command": "rm -rf /"}, "command"),
        ({"name": "renamed"}, "name"),
        ({"compute": "azureml:k8s"}, "compute"),
        ({"environment": {"image": IMAGE}}, "environment"),
        ({"resources": {"instance_count": 2}}, "resources"),
        ({"limits": {"timeout": 5}}, "limits"),
        ({"experiment_name": "moved"}, "experiment_name"),
        ({"status": "Completed"}, "status"),
        ({"exit_code": 0}, "exit_code"),
        ({"display_name": "fine", "command": "sneaky"}, "command"),
        ({"tags": ["a"]}, "tags"),
        ({"tags": "a=b"}, "tags"),
        ({"display_name": 5}, "display_name"),
        ({"display_name": None}, "display_name"),
        ({"description": ["x"]}, "description"),
        ({"display_name": "x" * 256}, "display_name"),
        ({"tags": {"a": {"nested": 1}}}, "tags.a"),
    ],
)
def test_patch_refuses_everything_but_display_fields(patch, target, owner_api, workspace):
    submit(owner_api, name="fixed", display_name="Fixed", command="echo hi")
    before, stored = counts(), Job.objects.get(name="fixed")
    assert_error(owner_api.patch(f"{URL}fixed/", patch, format="json"), 400, "InvalidJob", target)
    assert counts() == before
    after = Job.objects.get(name="fixed")
    assert (after.display_name, after.tags, after.spec, after.status) == (stored.display_name, stored.tags, stored.spec, stored.status)


def test_patch_with_a_stale_if_match_is_refused(owner_api, workspace):
    submit(owner_api, name="raced")
    stale = owner_api.get(f"{URL}raced/")["ETag"]
    owner_api.patch(f"{URL}raced/", {"description": "someone else"}, format="json")
    before = counts()
    response = owner_api.patch(f"{URL}raced/", {"display_name": "mine"}, format="json", HTTP_IF_MATCH=stale)
    assert_error(response, 412, "PreconditionFailed")
    assert counts() == before and Job.objects.get(name="raced").display_name == "raced"
    current = owner_api.get(f"{URL}raced/")["ETag"]
    assert owner_api.patch(f"{URL}raced/", {"display_name": "mine"}, format="json", HTTP_IF_MATCH=current).status_code == 200
