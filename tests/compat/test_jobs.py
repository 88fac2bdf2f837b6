"""Azure ML's command-job YAML, as its reference documents the shapes, posted as YAML: what Dockyard stores, or refuses and why.

The documents are written here from Azure ML's CLI (v2) command-job YAML reference (field names, values and defaults
are facts): typed and untyped inputs, outputs, `code`, environments by image, distribution blocks, enum values in the
letter cases Azure ML's schema reads. Local jobs need local compute enabled (as staff would); Kubernetes jobs an
attached compute `k8s`.
"""
import pytest

from jobs.models import Job
from jobs.tests.support import k8s  # noqa: F401 (a fixture: the attached compute `k8s`)
from tests.compat.support import YamlRoute

pytestmark = pytest.mark.usefixtures("local_compute")
URL = "/api/v1/workspaces/team-a/jobs/"
SCHEMA = "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
ROUTE = YamlRoute(URL, (Job,), SCHEMA)
post, created, refused = ROUTE.post, ROUTE.created, ROUTE.refused


@pytest.fixture
def shared(settings, tmp_path):
    """A folder the server shares with local jobs, holding a code folder `src`."""
    (tmp_path / "shared" / "src").mkdir(parents=True)
    (tmp_path / "shared" / "src" / "train.py").write_text("print('hi')\n")
    settings.DOCKYARD_LOCAL_PATHS = [tmp_path / "shared"]
    return tmp_path / "shared"


# inputs


def test_an_input_without_type_is_a_uri_folder(owner_api):
    job = created(owner_api, "command: ls ${{inputs.training_data}}\ncompute: local\n"
                             "inputs:\n  training_data:\n    path: /srv/data\n    mode: ro_mount\n")
    assert job["inputs"] == {"training_data": {"type": "uri_folder", "path": "/srv/data", "mode": "ro_mount"}}


def test_typed_inputs_of_every_kind(owner_api):
    job = created(owner_api, """command: python main.py ${{inputs.iris}} ${{inputs.lr}} ${{inputs.boosting}} ${{inputs.epochs}}
compute: local
inputs:
  iris:
    type: uri_file
    path: https://azuremlexamples.blob.core.windows.net/datasets/iris.csv
    mode: download
  lr: 0.9
  boosting:
    type: string
    default: gbdt
  epochs:
    type: integer
    default: 3
""")
    assert job["inputs"] == {
        "iris": {"type": "uri_file", "path": "https://azuremlexamples.blob.core.windows.net/datasets/iris.csv",
                 "mode": "download"},
        "lr": 0.9, "boosting": {"type": "string", "default": "gbdt"}, "epochs": {"type": "integer", "default": 3},
    }


def test_an_input_mode_azure_ml_does_not_have_for_the_type(owner_api):
    message = refused(owner_api, "command: ls\ncompute: local\ninputs:\n  d:\n    path: data\n    mode: rw_mount\n",
                      "inputs.d.mode")
    assert "ro_mount" in message


# letter case, as Azure ML's schema reads enum values (lower-cased before the check)


def test_enum_values_in_any_case_are_stored_canonical(owner_api, k8s):  # noqa: F811
    job = created(owner_api, f"""type: Command
command: python train.py --data ${{{{inputs.data}}}}
compute: azureml:k8s
environment:
  image: {IMAGE}
inputs:
  data:
    type: URI_FOLDER
    path: /mnt/cifar/
    mode: RO_MOUNT
resources:
  instance_count: 2
distribution:
  type: PyTorch
  process_count_per_instance: 2
""")
    assert job["type"] == "command"
    assert job["inputs"]["data"]["type"] == "uri_folder" and job["inputs"]["data"]["mode"] == "ro_mount"
    assert job["distribution"] == {"type": "pytorch", "process_count_per_instance": 2}


def test_an_output_type_in_capitals(owner_api):
    job = created(owner_api, "command: echo\ncompute: local\noutputs:\n  model:\n    type: Uri_Folder\n    mode: Upload\n")
    assert job["outputs"] == {"model": {"type": "uri_folder", "mode": "upload"}}


# outputs


def test_hello_world_output_on_local(owner_api):
    job = created(owner_api, "command: echo \"hello world\" > ${{outputs.hello_output}}/helloworld.txt\ncompute: local\n"
                             "outputs:\n  hello_output:\n")
    assert job["outputs"] == {"hello_output": None}


def test_an_output_to_a_datastore_path_is_refused(owner_api):
    message = refused(owner_api, "command: echo\ncompute: local\noutputs:\n  model:\n    type: uri_folder\n"
                                 "    path: azureml://datastores/workspaceblobstore/paths/out/\n", "outputs.model.path")
    assert "no datastore" in message


def test_a_direct_output_is_refused(owner_api):
    assert "direct" in refused(owner_api, "command: echo\ncompute: local\noutputs:\n  m:\n    mode: direct\n", "outputs.m.mode")


def test_outputs_on_kubernetes_are_taken_the_pods_sidecar_uploads_them(owner_api, k8s):  # noqa: F811
    job = created(owner_api, f"command: echo\ncompute: azureml:k8s\nenvironment:\n  image: {IMAGE}\n"
                             "outputs:\n  model:\n    type: uri_folder\n")
    assert job["outputs"]["model"]["type"] == "uri_folder"


# code


def test_code_on_local_is_stored_and_copied_in_when_it_starts(owner_api, shared):
    job = created(owner_api, f"code: {shared / 'src'}\ncommand: python train.py\ncompute: local\n")
    assert job["code"] == str(shared / "src")


def test_code_relative_to_the_yaml_needs_the_cli_to_resolve_it(owner_api, shared):
    assert "absolute path" in refused(owner_api, "code: src\ncommand: python train.py\ncompute: local\n", "code")


def test_code_on_kubernetes_is_refused_until_code_shipping_lands(owner_api, k8s):  # noqa: F811
    message = refused(owner_api, f"code: /srv/src\ncommand: python train.py\ncompute: azureml:k8s\n"
                                 f"environment:\n  image: {IMAGE}\n", "code")
    assert "not shipped" in message


def test_code_on_serverless_is_refused(owner_api):
    assert "not shipped" in refused(owner_api, f"code: /srv/src\ncommand: x\nenvironment:\n  image: {IMAGE}\n", "code")


# environments


def test_an_environment_by_image_on_kubernetes(owner_api, k8s):  # noqa: F811
    job = created(owner_api, f"command: echo hi\ncompute: azureml:k8s\nenvironment:\n  image: {IMAGE}\n")
    assert job["environment"] == {"image": IMAGE}


def test_an_image_on_local_is_refused(owner_api):
    assert "not in a container" in refused(owner_api, f"command: echo\ncompute: local\nenvironment:\n  image: {IMAGE}\n",
                                           "environment.image")


@pytest.mark.parametrize("environment, target, reason", [
    (f"  image: {IMAGE}\n  conda_file: conda.yml\n", "environment.conda_file", "the CLI sends its content"),
    ("  build:\n    path: ./docker\n", "environment.build", "BuildKit or Kaniko"),
    ("  name: sklearn-env\n", "environment.name", "not registered"),
])
def test_environments_dockyard_cannot_build_are_refused(owner_api, k8s, environment, target, reason):  # noqa: F811
    assert reason in refused(owner_api, f"command: echo\ncompute: azureml:k8s\nenvironment:\n{environment}", target)


def test_a_curated_environment_reference_runs_its_public_image(owner_api, k8s):  # noqa: F811
    job = created(owner_api, "command: echo\ncompute: azureml:k8s\nenvironment: azureml:AzureML-sklearn-1.0:1\n")
    assert job["environment"] == {"image": "mcr.microsoft.com/azureml/curated/sklearn-1.0:1",
                                  "reference": "azureml:AzureML-sklearn-1.0:1"}


# distribution


def test_tensorflow_one_worker_per_instance(owner_api, k8s):  # noqa: F811
    job = created(owner_api, f"command: python train.py\ncompute: azureml:k8s\nenvironment:\n  image: {IMAGE}\n"
                             "resources:\n  instance_count: 2\ndistribution:\n  type: tensorflow\n  worker_count: 2\n")
    assert job["distribution"] == {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 0}


def test_mpi_with_several_processes_per_instance_is_refused(owner_api, k8s):  # noqa: F811
    message = refused(owner_api, f"command: python train.py\ncompute: azureml:k8s\nenvironment:\n  image: {IMAGE}\n"
                                 "distribution:\n  type: mpi\n  process_count_per_instance: 2\n",
                      "distribution.process_count_per_instance")
    assert "mpirun" in message


# fields without a backend here


@pytest.mark.parametrize("text, target, reason", [
    ("resources:\n  docker_args: --ipc=host\n", "resources.docker_args", "docker run"),
    ("resources:\n  instance_count: 1\n  max_instance_count: 4\n", "resources.max_instance_count", "Elastic"),
    ("queue_settings:\n  job_tier: spot\n", "queue_settings", "not honoured"),
    ("identity:\n  type: user_identity\n", "identity", "Azure identity"),
    ("services:\n  my_jupyter:\n    type: jupyter_lab\n", "services", "not started"),
])
def test_fields_without_a_backend_are_refused_with_the_reason(owner_api, k8s, text, target, reason):  # noqa: F811
    message = refused(owner_api, f"command: echo\ncompute: azureml:k8s\nenvironment:\n  image: {IMAGE}\n{text}", target)
    assert reason in message
