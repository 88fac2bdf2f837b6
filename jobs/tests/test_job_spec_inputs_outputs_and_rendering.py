"""jobs/spec.py: inputs and outputs, ${{inputs.x}} / ${{outputs.y}} references, and the command they render to."""
import pytest

from jobs.spec import input_text, parse_job, render_command, shm_quantity
from jobs.tests.support import job, targets_of

DATA_PATH = "azureml://datastores/workspaceblobstore/paths/cifar/"


# inputs and outputs


@pytest.mark.parametrize(
    "value",
    [
        "hello world", 42, 0.01, True,
        {"type": "string", "default": "gbdt"},
        {"type": "integer", "default": 10},
        {"type": "number", "default": 0.5},
        {"type": "boolean", "default": False},
        {"type": "uri_folder", "path": DATA_PATH, "mode": "ro_mount"},
        {"type": "uri_file", "path": "https://azuremlexamples.blob.core.windows.net/datasets/iris.csv"},
        {"type": "mltable", "path": "azureml:titanic:1"},
        {"type": "mlflow_model", "path": "azureml:model:3", "mode": "download"},
        {"type": "custom_model", "path": "./model"},
    ],
)
def test_input_forms_are_kept_as_given(value):
    assert parse_job(job(inputs={"x": value}))["inputs"] == {"x": value}


@pytest.mark.parametrize(
    "inputs, target",
    [
        ({"1x": 1}, "inputs.1x"),
        ({"learning-rate": 0.1}, "inputs.learning-rate"),
        ({"x": None}, "inputs.x"),
        ({"x": [1, 2]}, "inputs.x"),
        ({"x": {"type": "uri_file"}}, "inputs.x"),
        ({"x": {"type": "uri_folder", "path": ""}}, "inputs.x"),
        ({"x": {"type": "uri_folder", "path": 5}}, "inputs.x"),
        ({"x": {"type": "integer"}}, "inputs.x"),
        ({"x": {"type": "string", "default": None}}, "inputs.x"),
        ({"x": {"type": "tensor", "path": "p"}}, "inputs.x"),
        (["x"], "inputs"),
        ("x=1", "inputs"),
    ],
)
def test_invalid_inputs(inputs, target):
    assert targets_of(job(inputs=inputs)) == [target]


@pytest.mark.parametrize("outputs", [
    {"model": {"type": "uri_folder", "mode": "rw_mount"}},
    {"model": {"type": "uri_folder", "mode": "upload"}},
    {"model": {"type": "uri_file", "mode": "mount", "description": "one file"}},
    {"model": None},  # Azure ML's `outputs: {hello_output: }`
])
def test_output_forms(outputs):
    assert parse_job(job(outputs=outputs))["outputs"] == outputs


@pytest.mark.parametrize("outputs, target", [
    ({"model": "uri_folder"}, "outputs.model"),
    ({"model": ["uri_folder"]}, "outputs.model"),
    ({"my-model": {"type": "uri_folder"}}, "outputs.my-model"),
    ({"9model": None}, "outputs.9model"),
    (["model"], "outputs"),
    ({"model": {"type": "uri_folder", "path": "azureml://datastores/workspaceblobstore/paths/out/"}}, "outputs.model.path"),
    ({"model": {"type": "mlflow_model", "name": "my model!"}}, "outputs.model.name"),
    ({"model": {"type": "mlflow_model", "name": "m", "version": "v2"}}, "outputs.model.version"),
    ({"model": {"type": "uri_folder", "version": "2"}}, "outputs.model.version"),
    ({"model": {"type": "uri_folder", "mode": "direct"}}, "outputs.model.mode"),
    ({"model": {"type": "tensor"}}, "outputs.model.type"),
    ({"model": {"type": "uri_folder", "colour": "red"}}, "outputs.model.colour"),
])
def test_invalid_outputs(outputs, target):
    assert targets_of(job(outputs=outputs)) == [target]


# ${{inputs.x}} and ${{outputs.y}}


@pytest.mark.parametrize(
    "command, ok",
    [
        ("python train.py --lr ${{inputs.lr}}", True),
        ("python train.py --lr ${{ inputs.lr }}", True),
        ("python train.py --out ${{outputs.model}}", True),
        ("python train.py --lr ${{inputs.lr}} --out ${{outputs.model}} --again ${{inputs.lr}}", True),
        ("echo $HOME ${HOME} {{inputs.nope}}", True),  # not references
        ("python train.py --lr ${{inputs.rate}}", False),
        ("python train.py --out ${{outputs.checkpoints}}", False),
        ("python train.py --out ${{outputs.lr}}", False),  # lr is an input
        ("python train.py --x ${{inputs.model}}", False),  # model is an output
        ("python train.py --x ${{parent.jobs.prep.outputs.data}}", False),
        ("python train.py --x ${{inputs}}", False),
        ("python train.py --x ${{inputs.}}", False),
    ],
)
def test_references_must_name_an_input_or_output(command, ok):
    body = job(command=command, inputs={"lr": 0.1}, outputs={"model": {"type": "uri_folder"}})
    if ok:
        assert parse_job(body)["command"] == command
    else:
        assert targets_of(body) == ["command"]


def test_a_reference_to_an_input_that_is_itself_invalid_is_reported_too():
    body = job(command="echo ${{inputs.x}}", inputs={"x": [1]})
    assert targets_of(body) == ["inputs.x", "command"]


# render_command and its helpers


@pytest.mark.parametrize(
    "command, inputs, outputs_dir, rendered",
    [
        ("echo hi", {}, "outputs", "echo hi"),
        ("echo ${{inputs.who}}", {"who": "world"}, "outputs", "echo world"),
        ("echo ${{ inputs.who }}!", {"who": "world"}, "outputs", "echo world!"),
        ("train --lr ${{inputs.lr}} --epochs ${{inputs.epochs}}", {"lr": 0.01, "epochs": 10}, "outputs",
         "train --lr 0.01 --epochs 10"),
        ("train --fast ${{inputs.fast}}", {"fast": True}, "outputs", "train --fast true"),
        ("train --boost ${{inputs.boost}}", {"boost": {"type": "string", "default": "gbdt"}}, "outputs", "train --boost gbdt"),
        ("train --n ${{inputs.n}}", {"n": {"type": "integer", "default": 3}}, "outputs", "train --n 3"),
        ("train --data ${{inputs.data}}", {"data": {"type": "uri_folder", "path": DATA_PATH}}, "outputs",
         f"train --data {DATA_PATH}"),
        ("train --out ${{outputs.model}}", {}, "outputs", "train --out outputs/model"),
        ("train --out ${{outputs.model}}/best.pt", {}, "/var/dockyard/jobs/7/outputs", "train --out /var/dockyard/jobs/7/outputs/model/best.pt"),
        ("cp ${{inputs.a}} ${{outputs.b}} && cat ${{inputs.a}}", {"a": "in.txt"}, "o", "cp in.txt o/b && cat in.txt"),
    ],
)
def test_render_command(command, inputs, outputs_dir, rendered):
    spec = parse_job(job(command=command, inputs=inputs, outputs={"model": None, "b": None}))
    assert render_command(spec, outputs_dir) == rendered


def test_render_command_default_outputs_folder_is_relative():
    spec = parse_job(job(command="ls ${{outputs.model}}", outputs={"model": None}))
    assert render_command(spec) == "ls outputs/model"


@pytest.mark.parametrize(
    "value, text",
    [
        ("a b", "a b"), (3, "3"), (0.5, "0.5"), (True, "true"), (False, "false"),
        ({"type": "boolean", "default": True}, "true"),
        ({"value": 7}, "7"),
        ({"type": "uri_file", "path": "data.csv"}, "data.csv"),
    ],
)
def test_input_text(value, text):
    assert input_text(value) == text


@pytest.mark.parametrize(
    "shm_size, quantity",
    [("2g", "2Gi"), ("2G", "2Gi"), ("512m", "512Mi"), ("512M", "512Mi"), ("64k", "64Ki"), ("100", "100"), ("100b", "100"),
     ("16g", "16Gi")],
)
def test_shm_quantity(shm_size, quantity):
    assert shm_quantity(shm_size) == quantity
