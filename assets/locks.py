"""The artifact store's one lock: writers of stored content share it, the collector of stored objects takes it alone.

A writer stores a blob only if its key is absent and then records a Blob row; the collector deletes a key only when no
row names it. Both are check-then-act, so they must not interleave: a writer holds the lock shared from its check to
its commit, the collector holds it exclusively from its row check to the deletes. Writers never wait for each other.
PostgreSQL: a transaction-level advisory lock (released at commit or rollback, never left behind by a crash).
SQLite (the embedded default) opens every transaction IMMEDIATE, so write transactions already run one at a time.
"""
from django.db import connection

# An advisory lock is named by a 64-bit number: this one's is "dockyard" in ASCII.
STORE_LOCK = int.from_bytes(b"dockyard", "big") & ((1 << 63) - 1)


def hold_store_shared() -> None:
    """Keep stored objects from being collected until this transaction ends (a writer of content calls it)."""
    _lock("pg_advisory_xact_lock_shared")


def hold_store_exclusive() -> None:
    """Wait for the writers in flight, and keep new ones out until this transaction ends (the collector calls it)."""
    _lock("pg_advisory_xact_lock")


def _lock(function: str) -> None:
    if not connection.in_atomic_block:
        raise RuntimeError("The store lock lasts a transaction: take it inside transaction.atomic().")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {function}(%s)", [STORE_LOCK])
