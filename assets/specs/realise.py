"""The shell step that realises a conda file when a job or deployment starts (pure: text only, no I/O).

One script serves both places. On Kubernetes it is the prelude of the main container's command, the environment in
an emptyDir of the pod (its own, never a node's folder shared between tenants): a container restarted in the same
pod finds it realised and says so. Locally it runs in a sandbox of its own that has the network, and the worker
keeps the result in a per-workspace cache (compute/runners/environments.py).

The conda file reaches the script through environment variables, not a ConfigMap: they travel inside the Job's (or
Deployment's) own pod template, so there is no second object to create, own, update and delete with it, and the
file is small (assets/specs/conda.py bounds it to 64 KiB). Nothing in it is secret: credentials in URLs are refused.
"""
import shlex

from assets.specs.conda import conda_hash, conda_yaml, plan

ROOT = "/opt/dockyard"  # where the environment's folder is (an emptyDir in a pod; a cache folder shown locally)
ENV_DIR = f"{ROOT}/env"
READY = ".dockyard-ready"  # written last, holding the conda file's hash: a folder without it is a half environment
FAILED = 97  # the exit code of a realisation that failed (the log says why above it)
PIP = "-m pip install --no-cache-dir --disable-pip-version-check --no-input --progress-bar off"


def realise_variables(conda: dict) -> dict[str, str]:
    """What the script reads: the file for a conda tool, pip's lines and the notes for venv + pip, the hash."""
    steps = plan(conda)
    return {
        "DOCKYARD_CONDA_HASH": conda_hash(conda),
        "DOCKYARD_CONDA_FILE": conda_yaml(conda),
        "DOCKYARD_CONDA_PYTHON": steps.python or "",
        "DOCKYARD_PIP_REQUIREMENTS": "\n".join(steps.requirements),
        "DOCKYARD_CONDA_NOTES": "\n".join(steps.notes()),
    }


def conda_variables(conda: dict) -> dict[str, str]:
    """The conda file's own `variables`, set in the environment the command runs in."""
    return dict(conda.get("variables") or {})


def active_variables(env_dir: str = ENV_DIR) -> dict[str, str]:
    """What a command run in the realised environment has (the environment first on PATH is added by the caller)."""
    return {"VIRTUAL_ENV": env_dir, "CONDA_PREFIX": env_dir}


def realise_script(root: str = ROOT, *, system_site_packages: bool = True) -> str:
    """The script: reuse a realised environment with the same hash, else realise it (a conda tool when the image has
    one, else python3 -m venv + pip), time it, and put it first on PATH. It stops with FAILED when realising fails.

    `system_site_packages`: the image's own packages stay importable (an environment "on top of the image").
    """
    env = f"{root}/env"
    q_root, q_env, ready = shlex.quote(root), shlex.quote(env), shlex.quote(f"{env}/{READY}")
    venv = "python3 -m venv" + (" --system-site-packages" if system_site_packages else "")
    return f"""dockyard_env={q_env}
if [ -f {ready} ] && [ "$(cat {ready})" = "$DOCKYARD_CONDA_HASH" ]; then
  echo "Environment reused: conda file sha256 $DOCKYARD_CONDA_HASH is already realised in $dockyard_env."
else
  dockyard_start=$(date +%s)
  rm -rf "$dockyard_env"
  mkdir -p {q_root}
  dockyard_tool=
  for dockyard_candidate in micromamba mamba conda; do
    if command -v "$dockyard_candidate" >/dev/null 2>&1; then dockyard_tool=$dockyard_candidate; break; fi
  done
  if [ -n "$dockyard_tool" ]; then
    printf '%s' "$DOCKYARD_CONDA_FILE" > {q_root}/conda.yml
    echo "Realising the conda file with $dockyard_tool into $dockyard_env."
    if [ "$dockyard_tool" = micromamba ]; then
      micromamba create --yes --prefix "$dockyard_env" --file {q_root}/conda.yml
    else
      "$dockyard_tool" env create --prefix "$dockyard_env" --file {q_root}/conda.yml
    fi || {{ echo "Environment could not be realised: $dockyard_tool failed (above)."; exit {FAILED}; }}
  else
    if ! command -v python3 >/dev/null 2>&1; then
      echo "Environment could not be realised: the image has no conda tool (micromamba, mamba, conda) and no python3."
      exit {FAILED}
    fi
    echo "Realising the conda file with python3 -m venv and pip into $dockyard_env (no conda tool in the image)."
    dockyard_python=$(python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    if [ -n "$DOCKYARD_CONDA_PYTHON" ]; then
      case "$dockyard_python" in
        "$DOCKYARD_CONDA_PYTHON"|"$DOCKYARD_CONDA_PYTHON".*) ;;
        *) echo "The conda file asks for python $DOCKYARD_CONDA_PYTHON; the image's python3 is $dockyard_python (a conda tool in the image would give $DOCKYARD_CONDA_PYTHON)." ;;
      esac
    fi
    if [ -n "$DOCKYARD_CONDA_NOTES" ]; then printf '%s\\n' "$DOCKYARD_CONDA_NOTES"; fi
    {venv} "$dockyard_env" || {{ echo "Environment could not be realised: python3 -m venv failed (above)."; exit {FAILED}; }}
    if [ -n "$DOCKYARD_PIP_REQUIREMENTS" ]; then
      printf '%s\\n' "$DOCKYARD_PIP_REQUIREMENTS" > {q_root}/requirements.txt
      "$dockyard_env/bin/python" {PIP} --requirement {q_root}/requirements.txt \\
        || {{ echo "Environment could not be realised: pip failed (above)."; exit {FAILED}; }}
    fi
  fi
  printf '%s\\n' "$DOCKYARD_CONDA_HASH" > {ready} \\
    || {{ echo "Environment could not be realised: $dockyard_env was not made."; exit {FAILED}; }}
  echo "Environment realised in $(( $(date +%s) - dockyard_start )) s."
fi
export PATH="$dockyard_env/bin:$PATH" VIRTUAL_ENV="$dockyard_env" CONDA_PREFIX="$dockyard_env"
"""


def with_prelude(command: str, root: str = ROOT) -> str:
    """A container command that realises the environment first, then runs `command` in it."""
    return realise_script(root) + command



VOLUME = "environment"
# A deployment's realisation may take minutes: its startup probe holds the liveness probe off meanwhile (at most 1 h).
STARTUP_PERIOD, STARTUP_FAILURES = 10, 360


def with_environment(pod_spec: dict, conda: dict | None, command: str | None = None) -> dict:
    """The pod with its first container realising `conda` into an emptyDir before its command runs.

    The container's `sh -c` command gets the script in front; a container that runs its image's own entrypoint is
    given `command` instead (a deployment's inference server). Without a conda file the pod is unchanged.
    """
    if not conda:
        return pod_spec
    main = pod_spec["containers"][0]
    given = main.get("command") or []
    script = given[2] if given[:2] == ["/bin/sh", "-c"] and len(given) == 3 else command
    if script is None:
        raise ValueError("the container has no `sh -c` command to put the realisation in front of")
    main["command"] = ["/bin/sh", "-c", with_prelude(script)]
    given_names = {item["name"] for item in main.get("env", [])}  # the run's own variables win over the file's
    variables = {key: value for key, value in conda_variables(conda).items() if key not in given_names}
    variables.update(realise_variables(conda))
    main["env"] = [*main.get("env", []), *({"name": key, "value": value} for key, value in sorted(variables.items()))]
    main["volumeMounts"] = [*main.get("volumeMounts", []), {"name": VOLUME, "mountPath": ROOT}]
    pod_spec["volumes"] = [*pod_spec.get("volumes", []), {"name": VOLUME, "emptyDir": {}}]
    return pod_spec


def startup_probe(probe: dict) -> dict:
    """A startup probe asking what `probe` asks, patient enough for a realisation to finish."""
    return {"httpGet": dict(probe["httpGet"]), "periodSeconds": STARTUP_PERIOD, "failureThreshold": STARTUP_FAILURES,
            "timeoutSeconds": probe.get("timeoutSeconds", 1)}
