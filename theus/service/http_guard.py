"""Checks every dashboard request passes, as trusted local servers do them.

Binding to loopback does not stop DNS rebinding: after rebinding, the attacker's page is
same-origin with the server and only the Host header still names the attacker's domain. So
(like Jupyter, and the MCP SDK after CVE-2025-49596): the Host header must be one of ours, a
foreign or `null` Origin is refused, and data needs a random per-run token compared in constant
time. No CORS header is ever sent, so no other origin can read an answer.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

# Sent with every answer. The page loads nothing but its own files (no inline code), cannot be
# framed, and leaks no token through the Referer header.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


# Defence in depth: the index never reads secret files, but a summary or signature could still
# quote a key pasted into source. Token shapes that are never legitimate graph content, each
# behind a literal prefix so a whole answer is scanned only for prefixes that occur in it.
def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host header values we answer to: loopback names (and any explicit unsafe host) + port."""
    names = [*LOOPBACK_NAMES, *(_bracket(h) for h in extra)]
    hosts = {f"{name}:{port}".lower() for name in names}
    if port == 80:  # browsers leave the default port out
        hosts |= {name.lower() for name in names}
    return frozenset(hosts)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_ok(host: str | None, allowed: frozenset[str]) -> bool:
    return host is not None and host.strip().lower() in allowed


def origin_ok(origin: str | None, allowed: frozenset[str]) -> bool:
    """No Origin (a plain navigation, curl) is fine; `null` and any other site are not."""
    if origin is None:
        return True
    origin = origin.strip().lower()
    return origin.startswith("http://") and origin[len("http://") :] in allowed


def token_ok(given: str | None, token: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())
