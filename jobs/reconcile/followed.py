"""What every followed job (a local process, a process on an attached VM) shares: its printed lines stored from a
byte offset kept in job.runner, and its end saved with its ./outputs kept."""
import logging
from collections.abc import Callable

from django.db import transaction

from .. import staging
from ..models import Job
from .status import append_lines, event, save, transition

logger = logging.getLogger(__name__)

# (offset, final) -> (complete lines from the offset, the offset after them)
Reader = Callable[[int, bool], tuple[list[str], int]]


def collect_output(job: Job, read: Reader, final: bool) -> None:
    """Store what the job printed since the last look (any bytes: see JobLogLine); `final` reads to the end."""
    offset = job.runner.get("log_offset", 0)
    while True:
        lines, new_offset = read(offset, final)
        if new_offset == offset:
            break
        store_lines(job, lines, new_offset - offset)
        # Saved with each read's lines: a read that fails after them (a dropped connection) resumes after them.
        job.runner = {**job.runner, "log_offset": new_offset}
        job.save(update_fields=["runner", "updated_at"])
        if not final:
            break
        offset = new_offset


def store_lines(job: Job, lines: list[str], size: int) -> None:
    """Append the lines; if they cannot be stored they are skipped with a warning, so the job still ends, cancels and
    deletes (an error here used to leave it Running for ever)."""
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction and row lock stay usable
            append_lines(job, [("", line) for line in lines])
    except Exception as exc:  # this job's output only: the look goes on
        logger.exception("Could not store the output of job %s", job.name)
        event(job, "OutputLost", f"{len(lines)} lines ({size} bytes) of output could not be stored "
                                 f"({type(exc).__name__}); later output is kept.", "Warning")


def end(job: Job, status: str, reason: str, exit_code: int | None = None) -> None:
    """Save the job's end, its ./outputs collected into storage first (kept with it; named outputs are registered
    when it completes)."""
    try:
        with transaction.atomic():  # a savepoint: a failure here leaves the caller's transaction usable
            said = staging.keep_outputs(job)
    except Exception as exc:  # storage unreachable: the job still ends; its outputs are said lost, not hidden
        logger.exception("Could not keep the outputs of job %s", job.name)
        said = [("Warning", "OutputsNotKept", f"Its outputs could not be kept in storage ({type(exc).__name__}).")]
    for kind, why, message in said:
        event(job, why, message, kind)
    save(job, transition(job, status, reason, exit_code=exit_code))


def exit_reason(code: int) -> str:
    if code > 128:
        return f"The command was killed by signal {code - 128} (exit code {code})."
    return f"The command exited with code {code}."
