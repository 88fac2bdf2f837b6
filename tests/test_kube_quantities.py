"""Table tests of the quantity grammar and the seed's rules for cpu, memory and GPUs."""
from decimal import Decimal

import pytest
from kubernetes.utils.quantity import parse_quantity

from controlplane.kube import quantities as q

VALID = ["1", "100m", "0.5", ".5", "1.", "+1", "1500Mi", "2Gi", "1k", "1M", "1e3", "1E3", "1e-3", "2n", "3u", "1Ei", "0"]
MALFORMED = ["", " 2", "2 ", "NaN", "nan", "Infinity", "-Infinity", "1_000", "1K", "1KB", "1mi", "1Mib", "1.2.3",
             "e3", "1e", "1e1.5", "0x10", "1,5", "１", "--1", "Mi", "1 Mi", "inf", "1Gi ", "\t1"]


@pytest.mark.parametrize("text", VALID)
def test_valid_quantities_match_the_client_parser(text):
    assert q.parse(text) == parse_quantity(text)


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_quantities_are_refused(text):
    with pytest.raises(q.QuantityError):
        q.parse(text)


@pytest.mark.parametrize("value", [None, True, 1.5, [1], {"a": 1}])
def test_non_string_values_are_refused(value):
    with pytest.raises(q.QuantityError):
        q.parse(value)


def test_integers_are_accepted_like_their_strings():
    assert q.parse(2) == Decimal(2)


@pytest.mark.parametrize("text", ["1e19", "9999999999Ei", "1e999999999"])
def test_values_past_int64_are_refused(text):
    with pytest.raises(q.QuantityError, match="too large"):
        q.parse(text)


@pytest.mark.parametrize(
    ("text", "millicores", "canonical"),
    [("100m", 100, "100m"), ("1", 1000, "1"), ("0.5", 500, "500m"), ("1.5", 1500, "1500m"), ("2000m", 2000, "2"),
     ("0.1", 100, "100m"), ("1e-3", 1, "1m"), (2, 2000, "2"), ("1k", 1000000, "1000")],
)
def test_cpu_in_millicores_or_cores(text, millicores, canonical):
    assert q.cpu_millicores(text) == millicores
    assert q.canonical_cpu(text) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [("0", "greater than zero"), ("0m", "greater than zero"), ("-1", "greater than zero"), ("0.0001", "finer than a millicore"),
     ("100u", "finer than a millicore"), ("abc", "not a Kubernetes quantity")],
)
def test_bad_cpu(text, message):
    with pytest.raises(q.QuantityError, match=message):
        q.cpu_millicores(text)


@pytest.mark.parametrize(
    ("text", "amount", "canonical"),
    [("1500Mi", 1500 * 2**20, "1500Mi"), ("2Gi", 2 * 2**30, "2Gi"), ("1024Mi", 2**30, "1Gi"), ("0.5Gi", 2**29, "512Mi"),
     ("1G", 10**9, "1G"), ("1e9", 10**9, "1G"), ("1500M", 1500 * 10**6, "1500M"), ("1000", 1000, "1k"),
     ("1001", 1001, "1001"), ("1536Mi", 1536 * 2**20, "1536Mi")],
)
def test_memory_as_whole_bytes(text, amount, canonical):
    assert q.memory_bytes(text) == amount
    assert q.canonical_memory(text) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [("0", "greater than zero"), ("0Gi", "greater than zero"), ("-1Gi", "greater than zero"),
     ("100m", "whole number of bytes"), ("1.5", "whole number of bytes"), ("1K", "not a Kubernetes quantity")],
)
def test_bad_memory(text, message):
    with pytest.raises(q.QuantityError, match=message):
        q.memory_bytes(text)


@pytest.mark.parametrize(("value", "count"), [(1, 1), ("2", 2), (0, 0), (None, 0), ("", 0)])
def test_gpu_counts(value, count):
    assert q.gpu_count(value) == count


@pytest.mark.parametrize("value", [-1, "1.5", 1.5, "1k", True, "one", " 1"])
def test_bad_gpu_counts(value):
    with pytest.raises(q.QuantityError, match="whole number"):
        q.gpu_count(value)


@pytest.mark.parametrize("text", VALID + ["-1", "5e-3"])
def test_the_crd_pattern_accepts_what_the_grammar_accepts(text):
    import re

    assert re.match(q.QUANTITY_PATTERN, text)
