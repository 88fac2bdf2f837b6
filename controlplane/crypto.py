"""Secrets at rest: Fernet with key rotation (the first key encrypts, every key decrypts)."""
import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])


def _current() -> MultiFernet:
    return _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt_json(value: dict) -> str:
    return _current().encrypt(json.dumps(value).encode()).decode() if value else ""


def decrypt_json(token: str) -> dict:
    if not token:
        return {}
    try:
        return json.loads(_current().decrypt(token.encode()))
    except InvalidToken as exc:
        raise RuntimeError("A stored secret cannot be decrypted with FIELD_ENCRYPTION_KEYS.") from exc
