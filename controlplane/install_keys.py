"""Keys generated on an install's first start: SECRET_KEY and the Fernet key, kept under var/ (imports no Django)."""
import base64
import os
import secrets
from collections.abc import Callable
from pathlib import Path


def new_secret_key() -> str:
    return secrets.token_urlsafe(50)


def new_field_key() -> str:
    """A Fernet key: 32 random bytes, URL-safe base64 (what Fernet.generate_key() returns)."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def load_or_create(path: Path, make: Callable[[], str]) -> str:
    """The key stored at `path`; the first caller writes a new one (0600).

    The key is written to a private temporary file and then hard-linked into place: link() fails when the name
    exists, so of processes starting at once (web, worker, beat) exactly one wins, and nobody ever reads a
    half-written file.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(make() + "\n")
                file.flush()
                os.fsync(file.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass  # another process was first: use its key
        finally:
            temporary.unlink()
    value = path.read_text().strip()
    if not value:
        raise RuntimeError(f"{path} is empty: restore it from a backup (a new key cannot decrypt what the old one "
                           "encrypted), or delete it if this install has nothing stored yet.")
    return value
