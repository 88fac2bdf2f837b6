"""SSRF: the strict server-URL parser, the address rules and the resolver check (issue 9, finding 3)."""
import ipaddress
import socket

import pytest

from controlplane import addresses


@pytest.fixture
def no_loopback(settings):
    settings.DOCKYARD_ALLOW_LOOPBACK = False
    settings.DOCKYARD_ALLOW_LINK_LOCAL = False


def refused(url: str) -> str | None:
    try:
        addresses.parse_server_url(url)
    except addresses.AddressRefused as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    "url, problem",
    [
        ("http://%31%36%39.254.169.254", "percent-encoded host"),  # the finding: percent-encoding decoded by the client
        ("https://%31%36%39.254.169.254", "percent-encoded host"),
        ("https://169.254.169.254%2f", "percent-encoded host"),
        ("https://[fe80::1%25eth0]", "percent-encoded host"),
        ("https://0xa9fea9fe", "non-standard form"),
        ("https://2852039166", "non-standard form"),
        ("https://169.254.43518", "non-standard form"),
        ("https://0251.0376.0251.0376", "non-standard form"),
        ("https://0xa9.0xfe.0xa9.0xfe", "non-standard form"),
        ("https://169.254.169.254.", "non-standard form"),
        ("https://010.0.0.1", "non-standard form"),  # octal: 8.0.0.1 to inet_aton, 10.0.0.1 to a reader
        ("https://host.123", "non-standard form"),
        ("https://user:pw@host", "carries credentials"),
        ("https://user@169.254.169.254", "carries credentials"),
        ("https://h/?x", "query or a fragment"),
        ("https://h?x", "query or a fragment"),
        ("https://h/#f", "query or a fragment"),
        ("https://h/api/v1", "has a path (/api/v1)"),
        ("https://h\\@169.254.169.254/", "control or non-ASCII"),
        ("https://h :443", "control or non-ASCII"),
        ("https://bücher.example", "control or non-ASCII"),
        ("ftp://h", "must start with https://"),
        ("h:6443", "must start with https://"),
        ("https://", "has no host"),
        ("https://h:", "empty port"),
        ("https://h:0", "invalid port"),
        ("https://h:65536", "invalid port"),
        ("https://h:+443", "invalid port"),
        ("https://[::1", "malformed IPv6"),
        ("https://[nothex]:443", "malformed IPv6"),
        ("https://under_score.example.com", "neither an IP address nor a host name"),
        ("http://10.0.0.1:6443", "must use https://"),
        ("http://k8s.example.com", "must use https://"),
    ],
)
def test_hostile_server_urls_are_refused_with_a_sentence(url, problem):
    message = refused(url)
    assert message is not None and problem in message, message


@pytest.mark.parametrize(
    "url, host, port",
    [
        ("https://10.0.0.1:6443", "10.0.0.1", 6443),
        ("https://K8S.Example.COM", "k8s.example.com", 443),
        ("https://k8s.example.com/", "k8s.example.com", 443),
        ("https://[2001:db8::1]:6443", "2001:db8::1", 6443),
        ("HTTPS://192.168.1.10", "192.168.1.10", 443),
        ("http://127.0.0.1:8001", "127.0.0.1", 8001),  # kubectl proxy on a laptop: loopback is allowed in development
        ("http://localhost:8001", "localhost", 8001),
    ],
)
def test_ordinary_server_urls_parse(url, host, port):
    endpoint = addresses.parse_server_url(url)
    assert (endpoint.host, endpoint.port) == (host, port)


def test_plain_http_to_loopback_needs_the_loopback_setting(no_loopback):
    assert "must use https://" in refused("http://127.0.0.1:8001")
    assert refused("https://127.0.0.1:6443") is None  # syntax is fine; the address check refuses it


@pytest.mark.parametrize(
    "address, why",
    [
        ("169.254.169.254", "a cloud metadata address"),
        ("169.254.170.2", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("168.63.129.16", "a cloud metadata address"),
        ("::ffff:169.254.169.254", "a cloud metadata address"),  # IPv4-mapped: mapped first
        ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),  # NAT64
        ("2002:a9fe:a9fe::1", "a cloud metadata address"),  # 6to4
        ("169.254.0.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("127.0.0.1", "a loopback address"),
        ("127.8.8.8", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("0.0.0.0", "an unspecified address"),
        ("0.1.2.3", "an unspecified address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("255.255.255.255", "a reserved address"),
        ("10.0.0.1", None),
        ("172.16.5.4", None),
        ("192.168.1.10", None),
        ("100.64.0.10", None),  # carrier-grade NAT: some clusters live there
        ("fd12:3456::1", None),
        ("2001:db8::1", None),
        ("8.8.8.8", None),
    ],
)
def test_address_rules(no_loopback, address, why):
    assert addresses.refusal(ipaddress.ip_address(address)) == why


def test_the_settings_open_loopback_and_link_local(settings):
    settings.DOCKYARD_ALLOW_LOOPBACK, settings.DOCKYARD_ALLOW_LINK_LOCAL = True, False
    assert addresses.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert addresses.refusal(ipaddress.ip_address("169.254.169.254")) == "a cloud metadata address"
    settings.DOCKYARD_ALLOW_LINK_LOCAL = True
    assert addresses.refusal(ipaddress.ip_address("169.254.169.254")) is None
    assert addresses.refusal(ipaddress.ip_address("224.0.0.1")) == "a multicast address"  # never


@pytest.mark.parametrize(
    "url",
    ["https://%31%36%39.254.169.254", "https://0xa9fea9fe", "https://169.254.43518", "https://[::ffff:169.254.169.254]",
     "https://user:pw@host", "https://h/?x", "https://h/#f", "https://100.100.100.200", "https://0.0.0.0",
     "https://224.0.0.1", "http://%31%36%39.254.169.254"],
)
def test_the_brief_table_of_hostile_urls_never_reaches_a_connection(no_loopback, url):
    """Each URL is refused by the parser or, once parsed, by the check of the address it stands for."""
    try:
        endpoint = addresses.parse_server_url(url)
    except addresses.AddressRefused:
        return
    with pytest.raises(addresses.AddressRefused):
        addresses.checked_addresses(endpoint.host, endpoint.port)


def test_a_name_is_resolved_and_every_address_checked(no_loopback):
    """`localhost` resolves (no DNS needed) to loopback: refused by what it resolves to, not by its spelling."""
    with pytest.raises(addresses.AddressRefused, match=r"localhost \(127\.0\.0\.1\) is a loopback address"):
        addresses.checked_addresses("localhost", 443)


def test_any_refused_address_among_several_refuses_the_name(no_loopback, monkeypatch):
    """A name with one good and one metadata address (round-robin DNS) is refused as a whole."""
    answers = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", 443)),
               (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 443))]
    monkeypatch.setattr(addresses.socket, "getaddrinfo", lambda *args, **kwargs: answers)
    with pytest.raises(addresses.AddressRefused, match="cloud metadata"):
        addresses.checked_addresses("mixed.example.com", 443)
    answers.pop()
    assert addresses.checked_addresses("mixed.example.com", 443) == [ipaddress.ip_address("10.0.0.7")]


def test_metadata_host_names_are_refused_whatever_they_resolve_to(no_loopback):
    for host in ("metadata.google.internal", "metadata", "metadata.azure.internal."):
        with pytest.raises(addresses.AddressRefused, match="metadata host"):
            addresses.checked_addresses(host, 80)


def test_a_name_that_does_not_resolve_is_left_to_the_worker_at_save_time(no_loopback):
    addresses.check_at_save("k8s.example.invalid", 6443)  # no error now; the worker's check will fail to resolve it
    with pytest.raises(socket.gaierror):
        addresses.checked_addresses("k8s.example.invalid", 6443)
