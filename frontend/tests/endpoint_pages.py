"""What the endpoint and deployment page tests share: the paths, the add-deployment form's values, readers of the
rendered page, and a local deployment left where a worker would leave it (the fixtures are in conftest.py)."""
import re
from pathlib import Path

from controlplane.reconciling import ProvisioningState
from endpoints.models import OnlineDeployment
from endpoints.services import deployment_create

LIST = "/w/team-a/endpoints/"
EP = "/w/team-a/endpoints/adder/"
ADDER = Path(__file__).resolve().parents[2] / "endpoints" / "tests" / "data" / "adder"
VENV = "/opt/inference-venv"  # not started here: any path will do
DEPLOYMENT_FORM = {"name": "blue", "code": str(ADDER), "scoring_script": "score.py", "venv": VENV, "instance_count": "1",
                   "environment_variables": "DEPLOYMENT_NAME=blue"}


def text(response) -> str:
    return response.content.decode()


def field_block(body: str, field: str) -> str:
    """The rendered block of one form field: label, input, its errors and help."""
    return next(block for block in body.split('<div class="mb-3 field ') if f'id="id_{field}"' in block)


def card_of(body: str, name: str) -> str:
    return re.search(rf'<div class="card deployment-card h-100" data-deployment="{name}">(.*?)\n    </div>\n', body, re.S).group(1)


def add(owner, endpoint, name: str, provisioning: str = ProvisioningState.SUCCEEDED, **status) -> OnlineDeployment:
    """A local deployment of the adder script, left where a worker would leave it."""
    deployment = deployment_create(user=owner, endpoint=endpoint, data={
        "name": name, "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"},
        "environment_variables": {"DEPLOYMENT_NAME": name}})
    running = {"state": "Running", "replicas": 1, "ready_replicas": 1, "restarts": 0, "reason": ""}
    OnlineDeployment.objects.filter(pk=deployment.pk).update(provisioning_state=provisioning, status={**running, **status})
    return OnlineDeployment.objects.get(pk=deployment.pk)
