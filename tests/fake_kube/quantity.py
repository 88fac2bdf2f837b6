"""Kubernetes resource quantities: the parser of k8s.io/apimachinery/pkg/api/resource, and its canonical form."""
from __future__ import annotations

import math
from fractions import Fraction

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_WRONG = "unable to parse quantity's suffix"

DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL_BY_EXP = {v: k for k, v in DECIMAL.items()}
BINARY_BY_EXP = {v: k for k, v in BINARY.items()}
NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """The string is not a Kubernetes quantity (message as the real server words it)."""


def _split(text: str) -> tuple[int, str, str, str]:
    """Sign, integer digits, fraction digits and suffix, following Go's parseQuantityString."""
    pos, end, sign = 0, len(text), 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        pos = 1
    start = pos
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit() and text[pos].isascii():
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    if pos != end:
        raise QuantityError(FORMAT_WRONG)
    return sign, num, denom, text[suffix_start:end]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, or QuantityError."""
    if suffix in DECIMAL:
        return 10, DECIMAL[suffix], "DecimalSI"
    if suffix in BINARY:
        return 2, BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            return 10, int(suffix[1:]), "DecimalExponent"
        except ValueError:
            pass
    raise QuantityError(SUFFIX_WRONG)


def parse(value: str | int | float) -> tuple[Fraction, str]:
    """The exact value and format of a quantity; raises QuantityError like the real decoder."""
    text = value if isinstance(value, str) else json_number(value)
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Fraction(0), "DecimalSI"
    sign, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    amount = Fraction(int(num + denom or "0"), 10 ** len(denom)) * Fraction(base) ** exponent
    amount = Fraction(math.ceil(amount / NANO)) * NANO  # the server keeps nano precision, rounding up
    if fmt == "BinarySI" and 0 < amount < 1:
        fmt = "DecimalSI"
    return sign * amount, fmt


def json_number(value: int | float) -> str:
    """How Go re-reads a JSON number as a quantity string."""
    if isinstance(value, bool):
        raise QuantityError(FORMAT_WRONG)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int) else repr(value)


def value_of(quantity: str | int | float) -> Fraction:
    """The exact numeric value of a quantity."""
    return parse(quantity)[0]


def canonical(quantity: str | int | float) -> str:
    """The string the server stores and returns ("1000m" -> "1", "0.5" -> "500m", "1024Mi" -> "1Gi")."""
    amount, fmt = parse(quantity)
    if amount == 0:
        return "0"
    if fmt == "BinarySI" and (-1024 < amount < 1024 or amount.denominator != 1):
        fmt = "DecimalSI"
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if fmt == "BinarySI":
        mantissa, exponent = int(amount), 0
        while mantissa % 1024 == 0 and exponent < 60:
            mantissa //= 1024
            exponent += 10
        return f"{sign}{mantissa}{BINARY_BY_EXP.get(exponent, '')}"
    mantissa, exponent = int(amount / NANO), -9
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if fmt == "DecimalExponent":
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{mantissa}{DECIMAL_BY_EXP[exponent]}"


def is_integer(quantity: str | int | float) -> bool:
    """Whether the quantity is a whole number (extended resources must be)."""
    return value_of(quantity).denominator == 1
