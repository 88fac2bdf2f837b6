"""The conda file module: what is taken, its canonical hash, and the plan that realises it without a conda tool."""
import pytest

from assets.specs.conda import (
    MAX_BYTES,
    MAX_ENTRIES,
    CondaFileError,
    check_conda_file,
    conda_hash,
    conda_requirement,
    conda_yaml,
    plan,
)

AZURE_ML = {  # the shape of Azure ML's examples (cli/jobs/single-step/*/environment/conda.yaml)
    "name": "sklearn-env",
    "channels": ["conda-forge"],
    "dependencies": ["python=3.10", "pip=23.0", "numpy=1.21", "scikit-learn==1.1.2", "cudatoolkit=11.3",
                     {"pip": ["mlflow==2.8.0", "azureml-mlflow", "--extra-index-url https://download.example/whl"]}],
}


def problems(value) -> list[tuple[str, str]]:
    with pytest.raises(CondaFileError) as caught:
        check_conda_file(value)
    return caught.value.errors


@pytest.mark.parametrize("spec, requirement", [
    ("numpy", "numpy"),
    ("numpy=1.21", "numpy==1.21.*"),
    ("numpy=1.21.5", "numpy==1.21.5.*"),
    ("numpy==1.21.5", "numpy==1.21.5"),
    ("numpy=1.21.5=py39h6c91a56_3", "numpy==1.21.5.*"),  # the build string is conda's alone
    ("numpy 1.21.*", "numpy==1.21.*"),
    ("numpy=1.*", "numpy==1.*"),
    ("numpy>=1.20,<2", "numpy>=1.20,<2"),
    ("conda-forge::numpy>=1.20", "numpy>=1.20"),
    ("pytorch::pytorch=1.13", "torch==1.13.*"),  # the same project under its PyPI name
    ("numpy 1.21|1.22", None),  # an OR pip cannot say
    ("numpy=1.*.2", None),
])
def test_conda_specs_become_pip_requirements(spec, requirement):
    assert conda_requirement(spec) == requirement


def test_the_plan_of_an_azure_ml_conda_file():
    steps = plan(check_conda_file(AZURE_ML))
    assert steps.python == "3.10"
    assert steps.requirements == ("numpy==1.21.*", "scikit-learn==1.1.2", "mlflow==2.8.0", "azureml-mlflow",
                                  "--extra-index-url https://download.example/whl")
    assert steps.not_realised == ("cudatoolkit=11.3 (a conda-only package: pip has none)",)
    assert steps.notes() == ["Not realised without a conda tool: cudatoolkit=11.3 (a conda-only package: pip has none)"]


def test_the_hash_is_of_the_content_not_its_spelling():
    spaced = {**AZURE_ML, "channels": ["  conda-forge "], "variables": {}}
    reordered = {key: AZURE_ML[key] for key in reversed(list(AZURE_ML))}
    assert conda_hash(check_conda_file(AZURE_ML)) == conda_hash(check_conda_file(spaced))
    assert conda_hash(check_conda_file(AZURE_ML)) == conda_hash(check_conda_file(reordered))
    other = {**AZURE_ML, "dependencies": ["python=3.11"]}
    assert conda_hash(check_conda_file(AZURE_ML)) != conda_hash(check_conda_file(other))


def test_the_yaml_for_a_conda_tool_is_what_was_given():
    import yaml

    checked = check_conda_file({**AZURE_ML, "variables": {"OMP_NUM_THREADS": 1}})
    assert yaml.safe_load(conda_yaml(checked)) == {**AZURE_ML, "variables": {"OMP_NUM_THREADS": "1"}}


@pytest.mark.parametrize("value, target, words", [
    pytest.param("conda.yml", "conda_file", "a mapping", id="not-a-mapping"),
    pytest.param({"prefix": "/opt/conda/envs/x"}, "conda_file.prefix", "leave prefix out", id="prefix"),
    pytest.param({"colour": 1}, "conda_file.colour", "not a conda file field", id="unknown"),
    pytest.param({"dependencies": "numpy"}, "conda_file.dependencies", "a list", id="dependencies-text"),
    pytest.param({"dependencies": [{"pip": "numpy"}]}, "conda_file.dependencies.0", "{pip:", id="pip-text"),
    pytest.param({"dependencies": [{"npm": ["x"]}]}, "conda_file.dependencies.0", "{pip:", id="npm"),
    pytest.param({"dependencies": [{"pip": [{"deep": [[["x"]]]}]}]}, "conda_file.dependencies.0.pip.0", "non-empty text",
                 id="deep"),
    pytest.param({"dependencies": ["numpy\0"]}, "conda_file.dependencies.0", "control character", id="nul"),
    pytest.param({"dependencies": ["numpy\n-r /etc/passwd"]}, "conda_file.dependencies.0", "control character",
                 id="newline"),
    pytest.param({"dependencies": ["$(reboot)"]}, "conda_file.dependencies.0", "not a conda package spec", id="shell"),
    pytest.param({"dependencies": ["numpy $(reboot)"]}, "conda_file.dependencies.0", "not a conda package spec",
                 id="shell-after-a-name"),
    pytest.param({"variables": {"DOCKYARD_CONDA_FILE": "x"}}, "conda_file.variables.DOCKYARD_CONDA_FILE", "Dockyard's own",
                 id="reserved-variable"),
    pytest.param({"dependencies": [{"pip": ["-r ../requirements.txt"]}]}, "conda_file.dependencies.0.pip.0",
                 "local files", id="pip-r"),
    pytest.param({"dependencies": [{"pip": ["-e ."]}]}, "conda_file.dependencies.0.pip.0", "local files", id="pip-e"),
    pytest.param({"dependencies": [{"pip": ["../secrets"]}]}, "conda_file.dependencies.0.pip.0", "local files",
                 id="pip-path-escape"),
    pytest.param({"dependencies": [{"pip": ["/etc/shadow"]}]}, "conda_file.dependencies.0.pip.0", "local files",
                 id="pip-absolute"),
    pytest.param({"dependencies": [{"pip": ["pkg @ file:///etc/passwd"]}]}, "conda_file.dependencies.0.pip.0",
                 "local files", id="pip-file-url"),
    pytest.param({"dependencies": [{"pip": ["--target /usr/lib"]}]}, "conda_file.dependencies.0.pip.0",
                 "option --target", id="pip-target"),
    pytest.param({"dependencies": [{"pip": ["--index-url"]}]}, "conda_file.dependencies.0.pip.0", "needs a value",
                 id="pip-option-without-value"),
    pytest.param({"dependencies": [{"pip": ["--find-links /etc"]}]}, "conda_file.dependencies.0.pip.0", "http(s) URL",
                 id="pip-find-links-folder"),
    pytest.param({"dependencies": [{"pip": ["--index-url https://me:token@pypi.example/simple"]}]},
                 "conda_file.dependencies.0.pip.0", "credentials", id="credentials"),
    pytest.param({"channels": ["https://user:pw@conda.example"]}, "conda_file.channels.0", "credentials",
                 id="channel-credentials"),
    pytest.param({"variables": {"1X": "a"}}, "conda_file.variables.1X", "name", id="variable-name"),
    pytest.param({"variables": {"X": ["a"]}}, "conda_file.variables.X", "text or a number", id="variable-list"),
    pytest.param({"dependencies": ["numpy" * 300]}, "conda_file.dependencies.0", "at most 1024", id="long-line"),
    pytest.param({"dependencies": [f"pkg{index}" for index in range(MAX_ENTRIES + 1)]}, "conda_file",
                 "entries", id="too-many-entries"),
    pytest.param({"dependencies": [{"pip": ["x" * 1000 + f"{index}" for index in range(80)]}]}, "conda_file",
                 f"at most {MAX_BYTES} are taken", id="too-big"),
])
def test_hostile_or_wrong_conda_files_are_refused_by_field(value, target, words):
    errors = problems(value)
    assert errors[0][0] == target and words in errors[0][1], errors
