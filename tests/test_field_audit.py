"""Accepted means acted on: what a parser keeps without acting on it is declared with the reason (`STORED_ONLY` beside
its field sets) and listed in the README's table, and both name fields the parser really accepts.

The walk over the job and endpoint parsers' accepted fields is a tripwire, not a proof: a field that is neither
declared stored-only nor shown-only must at least be read by a module that does something with it (manifests,
reconcile, the runners, the data plane, services); a field nobody reads any more fails here until it is acted on,
refused or declared. Compute parsers have their own walk (compute/tests/test_field_audit.py).
"""
import re
from pathlib import Path

import pytest

from compute import shapes
from compute import spec as computes
from endpoints import spec as endpoint_spec
from jobs import spec as job_spec

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Fields accepted but not acted on"
SHOWN_ONLY = {"$schema", "name", "display_name", "description", "tags", "experiment_name"}
ACTING_MODULES = ("manifests.py", "services.py", "services/", "selectors.py", "files.py", "dataplane.py", "reconcile/", "runners/")


def job_fields() -> set[str]:
    """Every field path the job parser accepts (`*` for a name the user chooses)."""
    fields = job_spec.TOP_LEVEL - job_spec.READ_ONLY
    fields |= {f"resources.{key}" for key in job_spec.RESOURCE_FIELDS}
    fields |= {f"environment.{key}" for key in job_spec.ENVIRONMENT_FIELDS}
    fields |= {f"inputs.*.{key}" for key in job_spec.INPUT_FIELDS}
    fields |= {f"outputs.*.{key}" for key in job_spec.OUTPUT_FIELDS}
    fields |= {f"limits.{key}" for key in job_spec.LIMITS_FIELDS}
    return fields | {"distribution.type"} | {f"distribution.{key}" for keys in job_spec.DISTRIBUTIONS.values() for key in keys}


def endpoint_fields() -> set[str]:
    """Every endpoint and deployment field path the endpoint parser accepts, nested settings included."""
    fields = endpoint_spec.ENDPOINT_FIELDS | endpoint_spec.DEPLOYMENT_FIELDS
    fields |= {f"environment.{key}" for key in endpoint_spec.ENVIRONMENT_FIELDS}
    fields |= {f"{probe}.{key}" for probe in ("liveness_probe", "readiness_probe") for key in endpoint_spec.PROBE_DEFAULTS}
    fields |= {f"request_settings.{key}" for key in endpoint_spec.REQUEST_DEFAULTS}
    return fields | {"scale_settings.type"} | {f"scale_settings.{key}" for key in endpoint_spec.TARGET_DEFAULTS}


def accepted(parser: str) -> set[str]:
    if parser == "job":
        return job_fields()
    if parser == "endpoint":
        return endpoint_fields()
    if parser == "instancetype":
        return set(shapes.ACCEPTED_FIELDS)
    return set(computes.ACCEPTED_FIELDS[parser])


def declared() -> set[tuple[str, str]]:
    """(parser, field) for every STORED_ONLY declaration in the code."""
    rows = {("job", field) for field in job_spec.STORED_ONLY} | {("endpoint", field) for field in endpoint_spec.STORED_ONLY}
    rows |= {("instancetype", field) for field in shapes.STORED_ONLY}
    return rows | {tuple(key.split(".", 1)) for key in computes.STORED_ONLY}


def readme_rows(text: str | None = None) -> set[tuple[str, str]]:
    """(parser, field) for every field the README's table names; a row names its parser first, then its fields."""
    text = text if text is not None else (ROOT / "README.md").read_text()
    assert SECTION in text, f"README.md has no '{SECTION}' section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows |= {(cells[0].strip("`"), field) for field in re.findall(r"`([^`]+)`", cells[1])}
    return rows


def covered(row: tuple[str, str], listed: set[tuple[str, str]]) -> bool:
    """A field is listed itself or through a listed parent (`schedules` covers `schedules.compute_start_stop`)."""
    parser, field = row
    parts = field.split(".")
    return any((parser, ".".join(parts[:end])) in listed for end in range(1, len(parts) + 1))


def test_the_readme_lists_every_declared_field_and_nothing_else():
    listed, code = readme_rows(), declared()
    assert sorted(row for row in code if not covered(row, listed)) == []
    assert sorted(listed - code) == []


@pytest.mark.parametrize("row", sorted(declared()), ids=lambda row: ".".join(row))
def test_each_declared_field_is_one_its_parser_accepts(row):
    parser, field = row
    assert field in accepted(parser)


def test_every_declaration_says_why():
    for reasons in (job_spec.STORED_ONLY, endpoint_spec.STORED_ONLY, computes.STORED_ONLY, shapes.STORED_ONLY):
        for field, why in reasons.items():
            assert why.rstrip().endswith(".") and len(why) > 30, field


def read_by_an_acting_module(app: str, field: str) -> bool:
    pattern = re.compile(rf"""["']{re.escape(field)}["']""")
    sources = [*(ROOT / app).rglob("*.py"), *(ROOT / "compute" / "runners").rglob("*.py")]
    return any(
        pattern.search(path.read_text()) for path in sources
        if "tests" not in path.parts and any(part in path.relative_to(ROOT).as_posix() for part in ACTING_MODULES)
    )


@pytest.mark.parametrize("app, parser, field", [
    *(("jobs", "job", field) for field in sorted(job_spec.TOP_LEVEL - job_spec.READ_ONLY)),
    *(("endpoints", "endpoint", field) for field in sorted(endpoint_spec.ENDPOINT_FIELDS | endpoint_spec.DEPLOYMENT_FIELDS)),
])
def test_every_other_top_level_field_is_read_where_work_is_done(app, parser, field):
    if field in SHOWN_ONLY or (parser, field) in declared():
        return
    assert read_by_an_acting_module(app, field), f"{parser} field '{field}' is accepted but nothing acts on it"


def test_the_table_reader_sees_parents_and_several_fields_a_row():
    text = f"{SECTION}\n\n| Parser | Fields | Why |\n|---|---|---|\n| `job` | `a`, `b.c` | because. |\n\n## Next\n| `x` | `y` | z |"
    assert readme_rows(text) == {("job", "a"), ("job", "b.c")}
    assert covered(("job", "a.d"), {("job", "a")}) and not covered(("job", "ab"), {("job", "a")})
