"""The README's "Test it" section names exactly the database and Redis dbs that bin/test sets by default."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bin_test_defaults() -> dict[str, str]:
    """{variable: default} of every `export X=${X:-default}` line in bin/test."""
    text = (ROOT / "bin" / "test").read_text()
    return dict(re.findall(r"^export (\w+)=\$\{\1:-([^}$]+)\}$", text, flags=re.MULTILINE))


def readme_test_section() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Test it", 1)[1].split("\n## ", 1)[0]
    return " ".join(section.split())  # a sentence may wrap anywhere


def test_bin_test_sets_a_database_a_broker_and_a_cache_db():
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"} <= bin_test_defaults().keys()


def test_the_readme_states_each_default_of_bin_test_next_to_its_variable():
    section = readme_test_section()
    for variable in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"):
        default = bin_test_defaults()[variable]
        assert f"`{variable}` (`{default}`)" in section, f"README's Test it section must say {variable}={default}"
