"""controlplane/kube/names.py against the API server's own rules (k8s.io/apimachinery/pkg/util/validation).

The expected verdicts are the apiserver's: IsQualifiedName for label keys, IsValidLabelValue, IsDNS1123Subdomain and
IsDNS1123Label. The fake API server keeps an independent copy (it must not import the app); both must agree.
"""
import pytest

from controlplane.kube import names
from tests.fake_kube.validation import meta

LABEL_KEYS = [
    ("gpu", True),
    ("kubernetes.io/os", True),
    ("node.kubernetes.io/instance-type", True),
    ("Accelerator_Type.v1", True),  # the name part may be mixed case, '_' and '.'
    ("a", True),
    ("a" * 63, True),
    ("a" * 64, False),
    ("example.com/" + "a" * 63, True),
    ("example.com/" + "a" * 64, False),
    ("/gpu", False),  # empty prefix: refused by the API server with 422
    ("a/", False),  # empty name
    ("/", False),
    ("", False),
    ("-a", False),
    ("a-", False),
    ("_a", False),
    ("a_b", True),
    ("a b", False),
    ("a/b/c", False),
    ("Example.com/gpu", False),  # the prefix is a DNS subdomain: lowercase only
    ("example_com/gpu", False),
    ("-example.com/gpu", False),
    ("example..com/gpu", False),
    # IsDNS1123Subdomain checks the total length (≤ 253) and the pattern, not each dot-separated part's length.
    ("a" * 253 + "/gpu", True),
    ("a" * 254 + "/gpu", False),
    (f"{'b' * 126}.{'c' * 126}/gpu", True),
    (f"{'b' * 126}.{'c' * 127}/gpu", False),
    ("gpu\n", False),  # a trailing newline: `$` alone would let it through
    ("gpu\x00", False),
    ("gpú", False),
]

LABEL_VALUES = [
    ("", True), ("a100", True), ("Standard_NC6s_v3", True), ("v1.2-3", True), ("a" * 63, True), ("a" * 64, False),
    ("-a", False), ("a-", False), ("a b", False), ("a/b", False), ("a100!", False), ("a\n", False), ("\x00", False),
]

DNS_SUBDOMAINS = [
    ("a", True), ("example.com", True), ("a-b.c-d", True), ("a" * 253, True), ("a" * 254, False), ("", False),
    ("A", False), ("a_b", False), ("-a", False), ("a-", False), ("a..b", False), (".a", False), ("a.", False),
    ("a\n", False),
]

DNS_LABELS = [
    ("a", True), ("default", True), ("ml-team", True), ("0a", True), ("a" * 63, True), ("a" * 64, False), ("", False),
    ("ML", False), ("ml_team", False), ("ml.team", False), ("-ml", False), ("ml-", False), ("ml\n", False),
]


@pytest.mark.parametrize("key, ok", LABEL_KEYS, ids=[repr(key)[:40] for key, _ in LABEL_KEYS])
def test_label_key(key, ok):
    problem = names.label_key_problem(key)
    assert (problem is None) is ok, problem
    assert (not meta.qualified_name(key)) is ok  # the fake API server answers the same


@pytest.mark.parametrize("value, ok", LABEL_VALUES, ids=[repr(value)[:40] for value, _ in LABEL_VALUES])
def test_label_value(value, ok):
    assert (names.label_value_problem(value) is None) is ok
    assert (not meta.label_value(value)) is ok


@pytest.mark.parametrize("value, ok", DNS_SUBDOMAINS, ids=[repr(value)[:40] for value, _ in DNS_SUBDOMAINS])
def test_dns_subdomain(value, ok):
    assert (names.dns_subdomain_problem(value) is None) is ok
    assert (not meta.dns_subdomain(value)) is ok


@pytest.mark.parametrize("value, ok", DNS_LABELS, ids=[repr(value)[:40] for value, _ in DNS_LABELS])
def test_dns_label(value, ok):
    assert (names.dns_label_problem(value) is None) is ok
    assert (not meta.dns_label(value)) is ok


@pytest.mark.parametrize(
    "key, words",
    [("/gpu", "empty"), ("a/", "empty"), ("Example.com/gpu", "invalid prefix"), ("a" * 64, "longer than 63"),
     ("a/b/c", "only one '/'")],
)
def test_messages_say_what_is_wrong(key, words):
    assert words in names.label_key_problem(key)


def test_messages_do_not_echo_huge_values():
    assert len(names.label_key_problem("-" * 100_000)) < 300
    assert len(names.label_value_problem("-" * 100_000)) < 300
