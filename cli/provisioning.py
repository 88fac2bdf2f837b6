"""Waiting for a resource the API provisions in the background (a compute, a deployment) to reach Succeeded or Failed."""
import time
from collections.abc import Callable

from .client import ApiClient
from .errors import EXIT_API_ERROR, CliError

FINAL_STATES = ("Succeeded", "Failed")
POLL_SECONDS = 1.0


def provisioning_failed(label: str, item: dict) -> CliError:
    errors = [error for error in item.get("provisioning_errors") or [] if isinstance(error, dict)]
    details = [{"target": error.get("code") or "", "message": error.get("message") or ""} for error in errors]
    return CliError(f"{label} could not be provisioned.", code="ProvisioningFailed", details=details, exit_code=EXIT_API_ERROR)


def wait_until_provisioned(client: ApiClient, path: str, item: dict, label: str, timeout: float,
                           progress: Callable[[str], object], show_command: str,
                           stop: Callable[[dict], bool] | None = None) -> dict:
    """Poll every second until Succeeded or Failed (or `stop(item)` says so), printing each state once; give up after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    shown = None
    while True:
        state = item.get("provisioning_state")
        if state != shown:
            progress(f"{label} {state}")
            shown = state
        if state in FINAL_STATES or (stop is not None and stop(item)):
            return item
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CliError(
                f"{label} is still {state} after {timeout:g} s; it goes on in the background (see `{show_command}`).",
                code="WaitTimedOut", exit_code=EXIT_API_ERROR,
            )
        time.sleep(min(POLL_SECONDS, remaining))  # the last look is at the deadline
        item = client.get(path).body
