"""What an endpoint URL says about where the answer came from (pure).

A loopback host is ``localhost`` or a name under ``.localhost`` (RFC 6761, section
6.3), an address in 127.0.0.0/8 (RFC 1122, section 3.2.1.3), ``::1`` (RFC 4291,
section 2.5.3), an IPv4-mapped form of either, or the unspecified address (``0.0.0.0``,
``::``), which a client on Linux reaches on the local host. A ``file://`` URL is a file
on this machine. Either way the answer is at most ``LOCAL`` evidence, whatever it says.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

from agc._core.redact import redact_text

__all__ = ["host_of", "is_local_endpoint", "is_loopback_host", "matches_host", "safe_url"]


def host_of(url: str) -> str | None:
    """The URL's host name, lower-case, without brackets; ``None`` if it has none."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def is_loopback_host(host: str) -> bool:
    """True for a loopback or unspecified address or a ``localhost`` name."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def is_local_endpoint(url: str) -> bool:
    """True when ``url`` is a ``file:`` URL or names a loopback host (or no host)."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return True  # not a URL a remote deployment could answer on
    if scheme == "file":
        return True
    host = host_of(url)
    return host is None or is_loopback_host(host)


def matches_host(host: str, patterns: tuple[str, ...]) -> bool:
    """True when ``host`` is one of ``patterns`` or a sub-domain of one."""
    name = host.rstrip(".").lower()
    return any(
        name == pattern.lower().rstrip(".") or name.endswith("." + pattern.lower().rstrip("."))
        for pattern in patterns
    )


def safe_url(url: str) -> str:
    """``url`` as it may be shown or stored: user information (``user:pass@``) replaced
    by ``***@`` and secrets in the rest redacted by the shared detector."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1])
    return redact_text(urlunsplit(parts))
