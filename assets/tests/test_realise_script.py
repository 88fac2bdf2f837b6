"""The realisation step a pod runs before its command, run here with a real shell: this host's python3 stands in for
the image's, and pip installs offline from a wheel folder built by the test (no index is reached)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assets.specs.conda import check_conda_file
from assets.specs.realise import FAILED, READY, realise_script, realise_variables
from assets.tests.wheels import make_wheel

IMAGE_PATH = "/usr/bin:/bin"  # the "image": this host's system python3, and no conda tool
CONDA = {"name": "tiny", "channels": ["conda-forge"],
         "dependencies": ["python=3", "pip", "dockyardtiny=1.0", "cudatoolkit=11.3", {"pip": ["dockyardother==2.0"]}]}
COMMAND = 'python -c "import dockyardtiny, dockyardother, sys; print(dockyardtiny.VALUE, dockyardother.VALUE, sys.prefix)"'

pytestmark = pytest.mark.skipif(any(shutil.which(tool, path=IMAGE_PATH) for tool in ("micromamba", "mamba", "conda"))
                                or not shutil.which("python3", path=IMAGE_PATH), reason="needs python3 and no conda tool")


@pytest.fixture
def wheels(tmp_path) -> Path:
    folder = tmp_path / "wheels"
    make_wheel(folder, "dockyardtiny", "1.0.3", "VALUE = 'tiny-1.0.3'\n")
    make_wheel(folder, "dockyardtiny", "1.1", "VALUE = 'tiny-1.1'\n")  # conda's =1.0 must not take it
    make_wheel(folder, "dockyardother", "2.0", "VALUE = 'other-2.0'\n")
    return folder


def run(root: Path, conda: dict, wheels: Path, command: str = COMMAND, path: str = IMAGE_PATH):
    env = {"PATH": path, "HOME": str(root.parent), "LANG": "C.UTF-8", "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": str(wheels), **realise_variables(check_conda_file(conda))}
    script = realise_script(str(root)) + command
    return subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)


def test_the_script_realises_with_venv_and_pip_then_reuses(tmp_path, wheels):
    root = tmp_path / "dockyard"
    first = run(root, CONDA, wheels)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    assert "with python3 -m venv and pip" in lines[0]
    assert "Not realised without a conda tool: cudatoolkit=11.3 (a conda-only package: pip has none)" in lines
    assert any(line.startswith("Environment realised in ") and line.endswith(" s.") for line in lines)
    assert lines[-1] == f"tiny-1.0.3 other-2.0 {root}/env"  # numpy=1.0 is 1.0.x: 1.0.3, not 1.1
    assert (root / "env" / READY).read_text().strip() == realise_variables(check_conda_file(CONDA))["DOCKYARD_CONDA_HASH"]

    again = run(root, CONDA, wheels)  # the container restarted in the same pod: the emptyDir is still there
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[0].startswith("Environment reused: conda file sha256 ")
    assert "Realising" not in again.stdout and again.stdout.splitlines()[-1].startswith("tiny-1.0.3 other-2.0")


def test_a_half_environment_is_realised_again_and_another_file_too(tmp_path, wheels):
    root = tmp_path / "dockyard"
    (root / "env" / "bin").mkdir(parents=True)  # a container killed mid-realisation: no ready mark
    (root / "env" / "bin" / "python").write_text("#!/bin/sh\necho half\n")
    result = run(root, CONDA, wheels)
    assert result.returncode == 0 and "Environment realised in" in result.stdout, result.stdout + result.stderr
    other = {"dependencies": [{"pip": ["dockyardother==2.0"]}]}
    changed = run(root, other, wheels, 'python -c "import dockyardother; print(dockyardother.VALUE)"')
    assert "Environment realised in" in changed.stdout and changed.stdout.splitlines()[-1] == "other-2.0"


def test_a_failing_pip_stops_before_the_command_with_its_reason(tmp_path, wheels):
    result = run(tmp_path / "dockyard", {"dependencies": [{"pip": ["no-such-package-here==9"]}]}, wheels,
                 "echo the command ran")
    assert result.returncode == FAILED
    assert "Environment could not be realised: pip failed (above)." in result.stdout
    assert "no-such-package-here" in result.stdout + result.stderr and "the command ran" not in result.stdout


def test_a_conda_tool_in_the_image_gets_the_conda_file_as_written(tmp_path, wheels):
    tools = tmp_path / "tools"
    tools.mkdir()
    stub = tools / "micromamba"  # records what it was asked, makes the prefix as micromamba would
    stub.write_text('#!/bin/sh\necho "$@" > "$HOME/asked"\ncp "$6" "$HOME/given.yml"\nmkdir -p "$4/bin"\n')
    stub.chmod(0o755)
    root = tmp_path / "dockyard"
    result = run(root, CONDA, wheels, "echo ran with $CONDA_PREFIX", path=f"{tools}{os.pathsep}{IMAGE_PATH}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Realising the conda file with micromamba" in result.stdout
    assert (tmp_path / "asked").read_text().split() == ["create", "--yes", "--prefix", f"{root}/env", "--file",
                                                        f"{root}/conda.yml"]
    assert yaml.safe_load((tmp_path / "given.yml").read_text()) == CONDA
    assert result.stdout.splitlines()[-1] == f"ran with {root}/env"


def test_the_local_realiser_reads_the_scripts_ready_mark_and_exit_code():
    from compute.runners import realiser  # a stdlib-only script: it keeps its own copies of the two names

    assert (realiser.READY, realiser.FAILED) == (READY, FAILED)
