"""Kubernetes resource quantities: the strict grammar, exact values, our rules, canonical strings (pure).

The client's `parse_quantity` goes through `Decimal()`, which also takes "NaN", "Infinity", "1_000" and
" 2 "; kube-apiserver rejects those. So the grammar is matched first, in full, and only then evaluated.
"""
import re
from decimal import Decimal, DecimalException

# apimachinery's grammar: <sign>?<number><suffix>, suffix binary SI, decimal SI or a decimal exponent.
QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<si>[KMGTPE]i|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?$"
)
# The same grammar as a JSON-schema pattern, for the InstanceType CRD (kube-apiserver enforces it).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1), "k": Decimal(10**3),
           "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
MILLI = Decimal("0.001")
# kube-apiserver keeps quantities in an int64 of the smallest unit; larger values are refused.
LARGEST = Decimal(2**63 - 1)


class QuantityError(ValueError):
    """A value that is not a valid quantity for its resource; the message is for a person."""


def parse(value: str | int) -> Decimal:
    """The exact value of a quantity string (or int), after a full match of the grammar."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise QuantityError(f"{value!r} is not a quantity: give a string such as \"500m\" or \"2Gi\".")
    text = str(value)
    match = QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity (examples: \"500m\", \"2\", \"1500Mi\", \"1e3\").")
    si = match["si"] or ""
    try:
        number = Decimal(match["number"])
        if match["exponent"]:
            amount = number.scaleb(int(match["exponent"]))
        else:
            amount = number * (BINARY.get(si) or DECIMAL[si])
    except DecimalException:
        amount = LARGEST + 1
    if abs(amount) > LARGEST:
        raise QuantityError(f"{text!r} is too large for a quantity.")
    return amount


def _positive(value: str | int, what: str) -> Decimal:
    amount = parse(value)
    if amount <= 0:
        raise QuantityError(f"The {what} must be greater than zero (got {value!r}).")
    return amount


def cpu_millicores(value: str | int) -> int:
    """CPU as a whole number of millicores ("100m" → 100, "1" → 1000); zero, negative and finer units refused."""
    cores = _positive(value, "CPU")
    millis = cores / MILLI
    if millis != millis.to_integral_value():
        raise QuantityError(f"CPU {value!r} is finer than a millicore (1m = 0.001 CPU).")
    return int(millis)


def memory_bytes(value: str | int) -> int:
    """Memory as a whole number of bytes ("1500Mi" → 1572864000); zero, negative and fractions refused."""
    amount = _positive(value, "memory")
    if amount != amount.to_integral_value():
        raise QuantityError(f"Memory {value!r} is not a whole number of bytes.")
    return int(amount)


def gpu_count(value: str | int | None) -> int:
    """GPUs as a whole number ≥ 0: 1, "2"; None and "" count as none."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", str(value)):
        raise QuantityError(f"The GPU count must be a whole number such as 1 (got {value!r}).")
    return int(value)


def format_cpu(millicores: int) -> str:
    """Canonical CPU string: whole cores as "2", otherwise millicores as "1500m"."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def format_memory(amount: int, binary: bool = True) -> str:
    """Canonical memory string in the largest unit of the input's family that divides it exactly."""
    units = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
    if not binary:
        units = [(suffix, int(factor)) for suffix, factor in reversed(DECIMAL.items()) if factor >= 1000]
    for suffix, factor in units:
        if amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)


def canonical_memory(value: str | int) -> str:
    """Validate memory and give its canonical string, keeping binary (Mi) or decimal (M) units as written."""
    match = QUANTITY.match(str(value))
    binary = bool(match and (match["si"] or "").endswith("i"))
    return format_memory(memory_bytes(value), binary=binary)


def canonical_cpu(value: str | int) -> str:
    return format_cpu(cpu_millicores(value))
