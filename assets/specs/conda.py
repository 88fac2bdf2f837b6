"""A conda file (Azure ML's `conda_file`): checked, made canonical, hashed, and turned into the plan that realises it
on top of an image when a job or deployment starts (pure: no Django, no I/O).

Azure ML's shape: `name`, `channels` (names or URLs), `dependencies` (conda specs such as `numpy=1.26`, and one or
more `{pip: [requirement lines]}`), `variables` (set in the environment). Everything is bounded: a conda file is
carried in a job's spec and in a pod's environment variable, so it stays small.

Where the image has a conda tool (micromamba, mamba or conda) the file is realised as written. Where it has none,
Python's own `venv` and pip realise what pip can: the pip lines as written, and the conda packages that are the same
package on PyPI, their versions translated (`numpy=1.21` is conda's "1.21 or any 1.21.x", pip's `numpy==1.21.*`).
`python` and `pip` themselves are not installed (the image's python3 makes the venv), and conda-only packages (CUDA
toolkits, compilers, C libraries) are listed in the log as not realised.
"""
import hashlib
import json
import re
from dataclasses import dataclass

FIELDS = ("name", "channels", "dependencies", "variables")
MAX_BYTES = 64 * 1024  # the canonical JSON: it travels in a pod's environment variable
MAX_ENTRIES = 500  # channels + dependencies + pip lines + variables
MAX_LINE = 1024
PACKAGE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}", re.ASCII)
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)
# A conda spec: [channel::]name[ version[ build]] or name=version[=build] or name<op>version[,<op>version]
CONDA_SPEC = re.compile(r"(?:(?P<channel>[^\s:]+)::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9_.+-]*)\s*"
                        r"(?P<rest>[A-Za-z0-9_.*+!=<>,|~ \[\]'\":/-]*)", re.ASCII)
CONDA_VERSION = re.compile(r"[A-Za-z0-9_.*+!-]+", re.ASCII)
PIP_OPERATORS = re.compile(r"(==|!=|>=|<=|~=|>|<)\s*[A-Za-z0-9_.*+!-]+", re.ASCII)
CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]*@")
# pip options a requirement file may hold that read no local file: the index and how to choose a distribution.
PIP_OPTIONS = {"--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--trusted-host", "--pre",
               "--prefer-binary", "--no-binary", "--only-binary"}
PIP_FLAGS = {"--pre", "--prefer-binary"}
URL_OPTIONS = {"--index-url", "-i", "--extra-index-url", "--find-links", "-f"}
LOCAL_FILE = re.compile(r"\s*(-r|--requirement|-c|--constraint|-e|--editable)(\s|=|$)")
LOCAL_PATH_PREFIXES = ("file:", "./", "../", "/", "~", ".\\", "..\\")
# Conda packages that are the same project on PyPI under another name.
PYPI_NAMES = {"pytorch": "torch", "py-xgboost": "xgboost", "pytables": "tables", "matplotlib-base": "matplotlib",
              "msgpack-python": "msgpack", "pyqt": "PyQt5", "tensorflow-base": "tensorflow"}
# Conda packages pip cannot install: binaries and libraries conda ships that PyPI has no package for.
CONDA_ONLY = {"cudatoolkit", "cudnn", "nccl", "cuda", "pytorch-cuda", "cpuonly", "mkl", "mkl-service", "mkl_fft",
              "mkl_random", "blas", "libblas", "openblas", "intel-openmp", "openssl", "ca-certificates", "certifi-conda",
              "gcc", "gxx", "gcc_linux-64", "gxx_linux-64", "compilers", "make", "cmake-conda", "git", "r-base",
              "libgcc-ng", "libstdcxx-ng", "libgomp", "libffi", "zlib", "xz", "sqlite", "tk", "readline", "ncurses",
              "ffmpeg", "cudatoolkit-dev", "magma-cuda", "nodejs", "pandoc"}
CONDA_ONLY_PREFIXES = ("cuda-", "libcu", "libnv", "_", "r-", "libgcc", "libstdcxx")
SKIPPED_ALWAYS = {"python": "the image's python3 makes the environment", "pip": "the environment's own pip installs"}


class CondaFileError(ValueError):
    """A conda file Dockyard will not take; `errors` are (field path, message) rows."""

    def __init__(self, errors: list[tuple[str, str]]):
        super().__init__(errors[0][1] if errors else "invalid conda file")
        self.errors = errors


@dataclass(frozen=True)
class Plan:
    """How a conda file is realised without a conda tool: the python asked for, pip's requirement lines, what is not."""

    python: str | None
    requirements: tuple[str, ...]
    not_realised: tuple[str, ...]

    def notes(self) -> list[str]:
        """What the log says before pip runs: one sentence per conda package pip does not install."""
        return [f"Not realised without a conda tool: {item}" for item in self.not_realised]


def check_conda_file(value: object, where: str = "conda_file") -> dict:
    """The conda file as kept (strings stripped, empty fields left out), or CondaFileError naming each problem."""
    errors: list[tuple[str, str]] = []
    if not isinstance(value, dict):
        raise CondaFileError([(where, "conda_file is a conda environment: a mapping with channels and dependencies "
                                      "(and pip lines under dependencies), or the path of such a file.")])
    for key in value:
        if key == "prefix":
            errors.append((f"{where}.prefix", "prefix is a folder on the machine that wrote the file; environments "
                                              "here are realised in their own folder: leave prefix out."))
        elif key not in FIELDS:
            errors.append((f"{where}.{key}", f"'{key}' is not a conda file field (name, channels, dependencies, "
                                             "variables)."))
    conda = {
        "name": _name(value.get("name"), f"{where}.name", errors),
        "channels": _channels(value.get("channels"), f"{where}.channels", errors),
        "dependencies": _dependencies(value.get("dependencies"), f"{where}.dependencies", errors),
        "variables": _variables(value.get("variables"), f"{where}.variables", errors),
    }
    conda = {key: item for key, item in conda.items() if item not in (None, [], {})}
    if not errors:
        errors += _bounds(conda, where)
    if errors:
        raise CondaFileError(errors)
    return conda


def _text(value: object, path: str, errors: list, what: str) -> str | None:
    """A non-empty line of at most MAX_LINE printable characters, stripped."""
    if not isinstance(value, str) or not value.strip():
        errors.append((path, f"{what} is non-empty text."))
        return None
    if len(value) > MAX_LINE:
        errors.append((path, f"{what} has at most {MAX_LINE} characters."))
        return None
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        errors.append((path, f"{what} holds a control character (NUL, newline, escape): write it on one line."))
        return None
    if CREDENTIALS.search(value):
        errors.append((path, f"{what} holds credentials in a URL (user:password@): a conda file is shown to everyone "
                             "in the workspace and to the pod; use an index that needs none, or one on the cluster."))
        return None
    return value.strip()


def _name(value: object, path: str, errors: list) -> str | None:
    if value is None or value == "":
        return None
    return _text(value, path, errors, "name")


def _channels(value: object, path: str, errors: list) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append((path, "channels is a list of channel names or URLs."))
        return []
    return [text for index, item in enumerate(value) if (text := _text(item, f"{path}.{index}", errors, "A channel"))]


def _dependencies(value: object, path: str, errors: list) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append((path, "dependencies is a list of conda package specs and {pip: [requirement lines]}."))
        return []
    result: list = []
    for index, item in enumerate(value):
        where = f"{path}.{index}"
        if isinstance(item, dict):
            if set(item) != {"pip"} or not isinstance(item["pip"], list):
                errors.append((where, "A mapping under dependencies is {pip: [requirement lines]}."))
                continue
            result.append({"pip": [line for number, raw in enumerate(item["pip"])
                                   if (line := _pip_line(raw, f"{where}.pip.{number}", errors))]})
        elif (text := _text(item, where, errors, "A dependency")) is not None:
            if conda_requirement(text) is None and not _conda_spec_shape(text):
                errors.append((where, f"{text!r} is not a conda package spec (numpy, numpy=1.26, "
                                      "conda-forge::numpy>=1.26)."))
            else:
                result.append(text)
    return result


def _conda_spec_shape(text: str) -> bool:
    """A spec conda reads that pip cannot be told (an OR of versions, a bracketed selector): kept, realised by conda."""
    match = CONDA_SPEC.fullmatch(text)
    return bool(match) and PACKAGE.fullmatch(match.group("name")) is not None


def _pip_line(value: object, path: str, errors: list) -> str | None:
    """One pip requirement line, or an option that reads no local file; anything that reads one is refused."""
    text = _text(value, path, errors, "A pip line")
    if text is None:
        return None
    if LOCAL_FILE.match(text) or text.startswith(LOCAL_PATH_PREFIXES) or re.search(r"@\s*file:", text):
        errors.append((path, "pip lines that read local files (-r, -c, -e, paths, file: URLs) cannot be followed where "
                             "the environment is realised: list the packages themselves."))
        return None
    if text.startswith("-"):
        option = re.split(r"[\s=]", text, maxsplit=1)[0]
        if option not in PIP_OPTIONS:
            errors.append((path, f"The pip option {option} is not taken here; these are: "
                                 f"{', '.join(sorted(PIP_OPTIONS))}."))
            return None
        value = text[len(option):].strip(" =")
        if option not in PIP_FLAGS and not value:
            errors.append((path, f"The pip option {option} needs a value."))
            return None
        if option in URL_OPTIONS and not value.startswith(("https://", "http://")):
            errors.append((path, f"The pip option {option} takes an http(s) URL here: a folder would be read where the "
                                 "environment is realised, not where the file was written."))
            return None
    return text


def _variables(value: object, path: str, errors: list) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append((path, "variables is a mapping of environment variable names to values."))
        return {}
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or not VARIABLE.fullmatch(key):
            errors.append((f"{path}.{key}", "A variable's name is letters, digits and '_', not starting with a digit."))
        elif key.upper().startswith("DOCKYARD_"):
            errors.append((f"{path}.{key}", "Names starting DOCKYARD_ are Dockyard's own (the realisation reads them)."))
        elif isinstance(item, bool) or not isinstance(item, str | int | float):
            errors.append((f"{path}.{key}", "A variable's value is text or a number."))
        elif (text := _text(str(item), f"{path}.{key}", errors, "A variable's value")) is not None:
            result[key] = text
    return result


def _bounds(conda: dict, where: str) -> list[tuple[str, str]]:
    entries = len(conda.get("channels", [])) + len(conda.get("variables", {}))
    for item in conda.get("dependencies", []):
        entries += 1 + (len(item["pip"]) if isinstance(item, dict) else 0)
    if entries > MAX_ENTRIES:
        return [(where, f"The conda file has {entries} entries; at most {MAX_ENTRIES} are taken.")]
    size = len(canonical(conda).encode("utf-8"))
    if size > MAX_BYTES:
        return [(where, f"The conda file holds {size} bytes; at most {MAX_BYTES} are taken.")]
    return []


def canonical(conda: dict) -> str:
    """One spelling per conda file (keys sorted, no spaces): what its hash is taken of."""
    return json.dumps(conda, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def conda_hash(conda: dict) -> str:
    """The sha256 of the canonical conda file: the environment's cache key (with the workspace)."""
    return hashlib.sha256(canonical(conda).encode("utf-8")).hexdigest()


def conda_yaml(conda: dict) -> str:
    """The conda file as YAML for a conda tool (every string JSON-quoted, which YAML reads as written)."""
    lines = []
    if conda.get("name"):
        lines.append(f"name: {json.dumps(conda['name'])}")
    for key in ("channels", "dependencies"):
        if conda.get(key):
            lines.append(f"{key}:")
        for item in conda.get(key, []):
            if isinstance(item, dict):
                lines.append("  - pip:")
                lines += [f"    - {json.dumps(line)}" for line in item["pip"]]
            else:
                lines.append(f"  - {json.dumps(item)}")
    if conda.get("variables"):
        lines.append("variables:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in conda["variables"].items()]
    return "\n".join(lines) + "\n"


# The plan without a conda tool


def plan(conda: dict) -> Plan:
    """What pip realises of a checked conda file, and what it cannot."""
    python, requirements, not_realised = None, [], []
    for item in conda.get("dependencies", []):
        if isinstance(item, dict):
            requirements += item["pip"]
            continue
        match = CONDA_SPEC.fullmatch(item)
        name = match.group("name").lower()
        if name == "python":
            python = _python_pin(match.group("rest"))
        elif name in SKIPPED_ALWAYS:
            continue
        elif name in CONDA_ONLY or name.startswith(CONDA_ONLY_PREFIXES):
            not_realised.append(f"{item} (a conda-only package: pip has none)")
        elif (requirement := conda_requirement(item)) is None:
            not_realised.append(f"{item} (a conda version spec pip cannot be told)")
        else:
            requirements.append(requirement)
    return Plan(python, tuple(requirements), tuple(not_realised))


def _python_pin(rest: str) -> str | None:
    version = rest.strip().lstrip("=<>!~ ").split("=")[0].split(",")[0].strip()
    return version or None


def conda_requirement(spec: str) -> str | None:
    """A conda package spec as a pip requirement line (`numpy=1.21` → `numpy==1.21.*`), or None when pip cannot say it."""
    match = CONDA_SPEC.fullmatch(spec.strip())
    if not match or not PACKAGE.fullmatch(match.group("name")):
        return None
    name = PYPI_NAMES.get(match.group("name").lower(), match.group("name"))
    rest = match.group("rest").strip()
    if not rest:
        return name
    if rest[0] == "=" and not rest.startswith("=="):
        return _fuzzy(name, rest[1:].split("=")[0])  # name=version[=build]: the build string is conda's alone
    if rest.startswith("=="):
        version = rest[2:].split("=")[0].strip()
        return f"{name}=={version}" if CONDA_VERSION.fullmatch(version) else None
    if rest[0] in "<>!~":
        parts = [part.strip() for part in rest.split(",")]
        return f"{name}{','.join(parts)}" if all(PIP_OPERATORS.fullmatch(part) for part in parts) else None
    version, _, _build = rest.partition(" ")  # "numpy 1.21.*" or "numpy 1.21.0 py39_0"
    return _fuzzy(name, version)


def _fuzzy(name: str, version: str) -> str | None:
    """conda's `=1.21` (1.21 or any 1.21.x) as pip's `==1.21.*`; a version with its own `*` as written."""
    version = version.strip()
    if not CONDA_VERSION.fullmatch(version) or version.count("*") > 1 or ("*" in version and not version.endswith("*")):
        return None
    if version.endswith("*"):
        return f"{name}=={version.rstrip('.*')}.*" if version.rstrip(".*") else name
    return f"{name}=={version}.*"


def inline_conda_file(value: object, errors: list, where: str = "environment.conda_file") -> dict | None:
    """A job's or deployment's `environment.conda_file`: the file's content (the CLI reads a path beside the YAML)."""
    if isinstance(value, str):
        errors.append((where, "conda_file names a file: the CLI sends its content (dockyard job create -f and "
                              "online-deployment create -f read it beside the YAML); send the conda file inline here."))
        return None
    try:
        return check_conda_file(value, where)
    except CondaFileError as exc:
        errors.extend(exc.errors)
        return None
