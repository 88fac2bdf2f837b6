"""The benchmark's PostgreSQL database: a throwaway test_<name> one (Django's), or its own one, recreated."""
import os
from contextlib import contextmanager
from urllib.parse import urlsplit

from django.core.management import call_command
from django.db import connection
from django.test.utils import setup_databases, setup_test_environment, teardown_databases


@contextmanager
def throwaway_database():
    """test_<name> next to DATABASE_URL's database, created and migrated as the test runner does; dropped at the end."""
    setup_test_environment()  # ALLOWED_HOSTS gets "testserver", as for the test client
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        yield
    finally:
        connection.close()
        teardown_databases(databases, verbosity=0)


def _admin(sql: str) -> None:
    import psycopg

    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    assert name and url.scheme.startswith("postgres"), "DATABASE_URL must name a PostgreSQL database"
    with psycopg.connect(url._replace(path="/postgres").geturl(), autocommit=True) as conn:
        for statement in sql.split(";"):
            conn.execute(statement.format(name=name))


def recreate_database() -> None:
    """DROP and CREATE DATABASE_URL's database itself (before Django connects to it), then migrate it."""
    _admin('DROP DATABASE IF EXISTS "{name}" WITH (FORCE); CREATE DATABASE "{name}"')
    call_command("migrate", verbosity=0, interactive=False)
    setup_test_environment()  # ALLOWED_HOSTS gets "testserver", as for the test client


def drop_database() -> None:
    connection.close()
    _admin('DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
