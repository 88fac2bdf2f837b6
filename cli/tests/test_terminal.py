"""What the server sends never drives the terminal (issue 9, item 9): names, messages and logs with ESC sequences.

Before, `dockyard job show` printed a display name's `ESC ] 0 ; … BEL` (retitles the terminal), `ESC [ 2 J` (clears it)
and the one-byte CSI 0x9b as they came, and `job logs` did the same with a log line.
"""
import io
import json
import sys

import click
import pytest
from django.utils import timezone

from cli.output import TerminalGuard, guard_terminal, terminal_safe
from jobs.models import Job, JobLogLine
from jobs.services import job_create

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "ok\x1b]0;pwned\x07\x1b[2J\x9b31m\x08\x7f\u202eevil"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\x08", "\x7f", "\u202e")


@pytest.mark.parametrize("text, shown", [
    ("plain text", "plain text"),
    ("tab\tand\nnewline", "tab\tand\nnewline"),
    ("\x1b[31mred\x1b[0m", "\\u001b[31mred\\u001b[0m"),
    ("title\x1b]0;x\x07", "title\\u001b]0;x\\u0007"),
    ("csi\x9b2J", "csi\\u009b2J"),
    ("over\rwrite", "over\nwrite"),
    ("crlf\r\n", "crlf\n"),
    ("nul\x00", "nul\\u0000"),
    ("\u202eright-to-left", "\\u202eright-to-left"),
    ("ünïcode ✓", "ünïcode ✓"),
])
def test_terminal_safe(text, shown):
    assert terminal_safe(text) == shown


def test_escaped_json_stays_json():
    text = json.dumps({"name": HOSTILE}, ensure_ascii=False)
    assert json.loads(terminal_safe(text)) == {"name": HOSTILE}


def test_the_guard_escapes_what_click_passes_on_to_a_terminal(monkeypatch):
    """On a terminal click keeps CSI sequences (it strips them only when output is not a terminal, as in tests)."""
    screen = io.StringIO()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # (guard_terminal wraps both; monkeypatch puts both back)
    guard_terminal()
    guard_terminal()  # once only
    assert isinstance(sys.stdout, TerminalGuard) and sys.stdout.stream is screen
    click.echo("a\x1b[2Jb\tc", color=True)
    assert screen.getvalue() == "a\\u001b[2Jb\tc\n"


def no_raw_controls(*outputs: str) -> None:
    for output in outputs:
        assert not any(control in output for control in RAW_CONTROLS), repr(output)


@pytest.fixture
def hostile_job(owner, workspace) -> Job:
    job = job_create(user=owner, workspace=workspace, data={
        "name": "hostile", "display_name": "x\x1b]0;t\x07", "command": "echo", "environment": {"image": "python:3.11"},
        "tags": {"t": HOSTILE}, "description": HOSTILE,
    })
    JobLogLine.objects.bulk_create([
        JobLogLine(job=job, seq=0, text=f"line\twith tab {HOSTILE}", time=timezone.now()),
        JobLogLine(job=job, seq=1, text="progress 10%\rprogress 20%", time=timezone.now()),
    ])
    Job.objects.filter(pk=job.pk).update(log_line_count=2, status="Completed", exit_code=0, end_time=timezone.now())
    return job


def test_names_and_fields_from_the_server_are_escaped(dockyard, hostile_job):
    shown = dockyard("job", "show", "hostile")
    listed = dockyard("job", "list")
    no_raw_controls(shown.stdout, shown.stderr, listed.stdout, listed.stderr)
    assert "x\\u001b]0;t\\u0007" in shown.stdout and "x\\u001b]0;t\\u0007" in listed.stdout
    assert dockyard.json("job", "show", "hostile")["description"] == HOSTILE  # JSON output: the same text, escaped


def test_log_lines_are_escaped_but_keep_their_tabs(dockyard, hostile_job):
    for args in (("job", "logs", "hostile"), ("job", "logs", "hostile", "--follow")):
        result = dockyard(*args)
        no_raw_controls(result.stdout, result.stderr)
        assert "line\twith tab ok\\u001b]0;pwned\\u0007" in result.stdout, args
        assert "progress 10%\nprogress 20%" in result.stdout, args


def test_error_messages_from_the_server_are_escaped(dockyard, hostile_job):
    result = dockyard("job", "show", "nope\x1b[2J")
    assert result.exit_code != 0
    no_raw_controls(result.stdout, result.stderr)
