"""endpoints/model_spec.py: where a deployment's model is shown (Azure ML's layout) and `model_mount_path`'s rules (pure)."""
import pytest

from controlplane.specs import SpecErrors
from endpoints.model_spec import bounds_problems, model_dir, mount_path_problem
from endpoints.spec import parse_deployment, target_errors
from endpoints.tests.bodies import kube_deployment as deployment
from endpoints.tests.bodies import targets

UPLOAD = "azureml://uploads/" + "b" * 64
REGISTERED = {"reference": "azureml:iris@latest", "name": "iris", "version": "3", "type": "custom_model", "path": UPLOAD}


@pytest.mark.parametrize("model, mount, folder", [
    (REGISTERED, None, "/var/azureml-app/azureml-models/iris/3"),  # Azure ML's <root>/<name>/<version>
    ({"path": UPLOAD, "type": "custom_model"}, None, "/var/azureml-app/azureml-models/model/1"),
    ({"path": UPLOAD, "type": "custom_model", "name": "mine", "version": "4"}, None, "/var/azureml-app/azureml-models/mine/4"),
    (REGISTERED, "/var/tfserving-model-mount", "/var/tfserving-model-mount"),
])
def test_the_model_is_where_azure_ml_puts_it(model, mount, folder):
    assert model_dir(model, mount) == folder


@pytest.mark.parametrize("path", ["/var/models", "/var/tfserving-model-mount", "/models/iris", "/tmp/model",
                                  "/var/azureml-app/azureml-models/own", "/srv/m/"])
def test_mount_paths_accepted(path):
    assert mount_path_problem(path) is None
    spec = parse_deployment(deployment(model=REGISTERED, model_mount_path=path), "ep")
    assert spec["model_mount_path"] == path.rstrip("/")


@pytest.mark.parametrize("path, words", [
    ("models", "absolute"), ("", "absolute"), (5, "absolute"), ("/", "would hide"), ("/usr", "would hide"),
    ("/usr/local/model", "would hide"), ("/var/azureml-app/code", "would hide"), ("/var/azureml-app/code/m", "would hide"),
    ("/var/azureml-app", "would hide"), ("/var", "would hide"), ("/tmp", "would hide"), ("/opt/miniconda", "would hide"),
    ("/proc/self", "would hide"), ("/var/../etc", "plainly"), ("/var//m", "plainly"), ("/var/./m", "plainly"),
    ("/var/m:ro", "plainly"), ("/var/m\x00", "control"), ("/var/" + "m" * 2000, "at most"), ("/var/mödel", "ASCII"),
])
def test_mount_paths_refused(path, words):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(model=REGISTERED, model_mount_path=path), "ep")
    assert targets(exc) == ["model_mount_path"] and words in exc.value.errors[0][1]


def test_a_mount_path_may_not_hide_the_scoring_code_inside_the_image():
    body = deployment(model=REGISTERED, model_mount_path="/srv/app/models",
                      code_configuration={"code": "/srv/app", "scoring_script": "score.py"})
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(body, "ep")
    assert targets(exc) == ["model_mount_path"] and "code folder /srv/app" in exc.value.errors[0][1]


@pytest.mark.parametrize("model", [None, {"path": "/var/azureml-app/models/adder"}])
def test_a_mount_path_needs_a_registered_or_uploaded_model(model):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(model=model, model_mount_path="/var/models"), "ep")
    assert targets(exc) == ["model_mount_path"] and "registered or uploaded model" in exc.value.errors[0][1]


def test_a_local_deployment_refuses_a_mount_path_with_the_reason():
    spec = parse_deployment(deployment(model=REGISTERED, model_mount_path="/var/models"), "ep")
    [(target, reason)] = [row for row in target_errors(spec, "local") if row[0] == "model_mount_path"]
    assert "not a custom container" in reason and "AZUREML_MODEL_DIR" in reason


def test_a_registered_triton_model_is_refused_with_the_reason():
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(model={**REGISTERED, "type": "triton_model"}), "ep")
    assert targets(exc) == ["model"] and "Triton" in exc.value.errors[0][1]


def test_model_bounds():
    assert bounds_problems(10, 100, 10, 100) == []
    assert "DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES" in bounds_problems(11, 100, 10, 100)[0][1]
    assert "DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES" in bounds_problems(10, 101, 10, 100)[0][1]
