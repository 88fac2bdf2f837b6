"""Endpoint keys: made at random, shown once, kept as SHA-256 hashes, compared in constant time."""
import hashlib
import hmac
import secrets

PREFIX_LENGTH = 6
KEY_TYPES = ("primary", "secondary")


def new_key() -> str:
    return secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def matches(key: str, hashes: list[str]) -> bool:
    """Whether `key` is one of the endpoint's keys (every hash is compared, so timing says nothing)."""
    digest = hash_key(key)
    found = False
    for stored in hashes:
        found |= bool(stored) and hmac.compare_digest(digest, stored)
    return found
