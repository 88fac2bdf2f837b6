"""The order of asset versions, numbers compared as numbers: 1 < 2 < 10 < 10.1 (pure: no Django, no I/O).

`@latest` is the highest version that is not archived (API.md). Versions are 1-30 characters of letters, digits,
'.', '-' and '_' (assets.specs.common); each run of digits compares by its value and each run of other characters as
text, digits before text at the same place, and a version before any longer one that starts with it (1.0 < 1.0.1).
"""
import re

PART = re.compile(r"[0-9]+|[A-Za-z]+")
DIGITS = 30  # a version has at most 30 characters, so no run of digits is longer


def sort_key(version: str) -> str:
    """Text whose order is the versions' order, under any database collation: what the database sorts by."""
    parts = []
    for part in PART.findall(version):
        parts.append("0" + part.lstrip("0").rjust(DIGITS, "0") if part.isdigit() else "1" + part.lower())
    # "!" sorts before "." and the parts: a version comes before the longer ones it starts; the version itself last
    # keeps "1.0" and "1-0" apart. Written in hexadecimal (digits and a-f, in byte order) because a language's
    # collation would skip the punctuation: "0" < "9" < "a" < "f" and shorter-first hold in every collation.
    return (".".join(parts) + "!" + version).encode().hex()


def next_version(versions: list[str]) -> str:
    """The version a new asset gets when none is given: one more than the highest whole-number version, else 1."""
    numbers = [int(version) for version in versions if version.isdigit()]
    return str(max(numbers, default=0) + 1)
