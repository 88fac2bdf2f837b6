"""The studio's YAML paste forms read YAML the API's way (issue 9, item 4): anchors, aliases and NUL are form errors.

The alias bomb went through `yaml.safe_load_all` here as well; now every form reads through controlplane.parsers.
"""
import html

import pytest

from compute.models import ComputeTarget, InstanceType
from compute.services import compute_create
from compute.tests.factories import as_checked, body, kubeconfig
from endpoints.models import OnlineDeployment
from endpoints.services import endpoint_create
from jobs.models import Job
from tests.test_hostile_inputs import alias_bomb
from workspaces.models import AuditEvent

JOB = {"name": "pasted", "command": "echo hi", "compute": "local"}
DEPLOYMENT = {"name": "green", "code_configuration": {"code": "adder", "scoring_script": "score.py"}, "environment": {"image": "x"}}
SHAPE = {"name": "small", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}


@pytest.fixture
def pages(owner, workspace):
    """Where each paste form lives, with the body it would accept."""
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})
    as_checked(compute_create(user=owner, workspace=workspace, data=body("kubernetes", name="k8s")))
    return {
        "job": ("/w/team-a/jobs/new/paste/", JOB),
        "deployment": ("/w/team-a/endpoints/adder/deployments/new/paste/", DEPLOYMENT),
        "instance type": ("/w/team-a/compute/k8s/instance-types/new/yaml/", SHAPE),
    }


def counts() -> tuple:
    return tuple(model.objects.count() for model in (Job, OnlineDeployment, InstanceType, ComputeTarget, AuditEvent))


def page_text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("form", ["job", "deployment", "instance type"])
def test_an_alias_bomb_is_a_form_error(form, pages, client_as):
    path, valid = pages[form]
    before = counts()
    response = client_as("owner").post(path, {"yaml": alias_bomb(valid)})
    assert response.status_code == 200
    assert "YAML anchors and aliases are not accepted" in page_text(response)
    assert counts() == before


@pytest.mark.parametrize("form", ["job", "deployment", "instance type"])
@pytest.mark.parametrize("bad, says", [('"a\\0b"', "NUL characters are not accepted"),
                                        ("[" * 40 + "]" * 40, "nested deeper than 32")])
def test_nul_and_deep_nesting_are_form_errors(form, bad, says, pages, client_as):
    import yaml

    path, valid = pages[form]
    before = counts()
    response = client_as("owner").post(path, {"yaml": yaml.safe_dump(valid) + f"tags: {{x: {bad}}}\n"})
    assert response.status_code == 200
    assert says in page_text(response)
    assert counts() == before


def test_the_kubeconfig_context_picker_refuses_aliases(client_as, workspace):
    pasted = kubeconfig() + "extra: &anchor 1\nagain: *anchor\n"
    response = client_as("owner").post("/w/team-a/compute/new/kubernetes/contexts/", {"kubeconfig": pasted})
    assert response.status_code == 200
    assert "The kubeconfig is not valid YAML." in page_text(response)
