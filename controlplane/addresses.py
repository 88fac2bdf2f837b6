"""Addresses tenants give (API servers, SSH hosts): parsed strictly, resolved, every address checked (SSRF).

The check runs when a record is saved (early, clear 400s) and again before every connection the worker makes,
which then connects to the address it checked: a name that resolves differently a second time (DNS rebinding)
is never looked up again for that connection.
"""
import ipaddress
import re
import socket
from dataclasses import dataclass

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$")
DOTTED_QUAD = re.compile(r"^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$")
# Resolvers read "2852039166", "0xa9fea9fe", "0251.0376.0251.0376" and "169.254.43518" as 169.254.169.254.
NUMERIC_LOOKING = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$", re.IGNORECASE)
METADATA_HOSTS = {"metadata.google.internal", "metadata.azure.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
METADATA_ADDRESSES = {
    ipaddress.ip_address(value) for value in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.169.253",  # AWS DNS resolver
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::253",
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
        "192.0.0.192",  # Oracle Cloud (older)
    )
}
NAT64 = ipaddress.ip_network("64:ff9b::/96")
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


class AddressRefused(ValueError):
    """The URL or an address it stands for is not one Dockyard connects to; the message is Dockyard's sentence."""


@dataclass(frozen=True)
class Endpoint:
    """A parsed server URL: scheme, host as written (lowercase), port."""

    scheme: str
    host: str
    port: int

    @property
    def where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_server_url(url: str, what: str = "The cluster server URL") -> Endpoint:
    """Strict parse of an API server URL: https (http to loopback only when allowed), a host, a port, nothing else."""
    if not isinstance(url, str) or not url:
        raise AddressRefused(f"{what} is missing.")
    if any(ord(char) <= 32 or ord(char) >= 127 for char in url) or "\\" in url:
        raise AddressRefused(f"{what} contains spaces, control or non-ASCII characters; write the host in ASCII (punycode).")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("https", "http"):
        raise AddressRefused(f"{what} must start with https://.")
    if "?" in rest or "#" in rest:
        raise AddressRefused(f"{what} must not carry a query or a fragment.")
    authority, slash, path = rest.partition("/")
    if path:
        raise AddressRefused(f"{what} has a path (/{path}); Dockyard reaches API servers at their root only, "
                             "not through a path prefix.")
    if "@" in authority:
        raise AddressRefused(f"{what} carries credentials; put them in the kubeconfig's users instead.")
    if "%" in authority:
        raise AddressRefused(f"{what} has a percent-encoded host; write the host as it is.")
    host, port = _split_authority(authority, scheme, what)
    endpoint = Endpoint(scheme, host, port)
    if scheme == "http" and not (settings.DOCKYARD_ALLOW_LOOPBACK and _is_loopback_host(host)):
        raise AddressRefused(f"{what} must use https://; plain http:// is accepted only for a loopback address "
                             "when DOCKYARD_ALLOW_LOOPBACK is set.")
    return endpoint


def _split_authority(authority: str, scheme: str, what: str) -> tuple[str, int]:
    if authority.startswith("["):
        literal, close, tail = authority[1:].partition("]")
        if not close or (tail and not tail.startswith(":")):
            raise AddressRefused(f"{what} has a malformed IPv6 address.")
        host, port_text = literal.lower(), tail[1:] if tail else ""
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise AddressRefused(f"{what} has a malformed IPv6 address.") from None
    else:
        host, colon, port_text = authority.partition(":")
        host = host.lower()
        if colon and not port_text:
            raise AddressRefused(f"{what} has an empty port.")
        check_host_syntax(host, what)
    default = 443 if scheme == "https" else 80
    if port_text and (not port_text.isdigit() or not 1 <= int(port_text) <= 65535):
        raise AddressRefused(f"{what} has an invalid port ({port_text}); use a number from 1 to 65535.")
    return host, int(port_text) if port_text else default


def check_host_syntax(host: str, what: str = "The host") -> None:
    """A dotted-quad IPv4 address, an IPv6 address or a DNS name; refuses the numeric forms resolvers decode."""
    if not host:
        raise AddressRefused(f"{what} has no host.")
    if DOTTED_QUAD.match(host) or _ipv6(host):
        return
    if NUMERIC_LOOKING.match(host) or host.rsplit(".", 1)[-1].isdigit():
        raise AddressRefused(f"{what} writes an IPv4 address in a non-standard form ({host}); "
                             "use four decimal numbers such as 10.0.0.1.")
    if not HOSTNAME.match(host):
        raise AddressRefused(f"{what} is neither an IP address nor a host name ({host}).")


def _ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), else the address itself."""
    if address.version == 6:
        if address.ipv4_mapped:
            return address.ipv4_mapped
        if address.sixtofour:
            return address.sixtofour
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def refusal(address: IPAddress) -> str | None:
    """Why Dockyard does not connect to this address (a phrase), or None; private ranges are fine."""
    address = embedded_ipv4(address)
    allow_link_local = settings.DOCKYARD_ALLOW_LINK_LOCAL
    if address in METADATA_ADDRESSES and not allow_link_local:
        return "a cloud metadata address"
    if address.is_loopback:
        return None if settings.DOCKYARD_ALLOW_LOOPBACK else "a loopback address"
    if address.is_unspecified or (address.version == 4 and address in THIS_NETWORK):
        return "an unspecified address"
    if address.is_link_local:
        return None if allow_link_local else "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    return None


def check_name(host: str) -> None:
    """Names that stand for a metadata service whatever DNS says."""
    if host.rstrip(".") in METADATA_HOSTS and not settings.DOCKYARD_ALLOW_LINK_LOCAL:
        raise AddressRefused(f"{host} is a cloud metadata host; Dockyard does not connect to it.")


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` stands for (IP literals as they are); raises socket.gaierror when it does not resolve."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in answers:
        text = str(sockaddr[0]).split("%", 1)[0]  # a scoped IPv6 address (fe80::1%eth0) is link-local anyway
        address = ipaddress.ip_address(text)
        if address not in found:
            found.append(address)
    return found


def checked_addresses(host: str, port: int) -> list[IPAddress]:
    """Resolve `host` and refuse it if ANY of its addresses is refused; returns the addresses (to connect to)."""
    check_name(host)
    addresses = resolve(host, port)
    for address in addresses:
        why = refusal(address)
        if why:
            shown = host if str(address) == host else f"{host} ({address})"
            raise AddressRefused(f"{shown} is {why}; Dockyard does not connect to it.")
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, "no address")
    return addresses


def check_at_save(host: str, port: int) -> None:
    """At validation: a name that resolves must resolve only to allowed addresses; one that does not yet is left
    to the worker, which checks again (with its own resolver) before connecting."""
    try:
        checked_addresses(host, port)
    except (socket.gaierror, UnicodeError):
        return
