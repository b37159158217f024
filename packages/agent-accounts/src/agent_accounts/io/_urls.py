"""Base URLs: only https, or plain http to a loopback address, so no token travels in clear text.

One checker for every URL a token is sent to (the usage API base and the token endpoint's
`auth_url`): the request URL is the base plus a fixed path, so a base with a query or a fragment
(`https://auth/#f` would post to `https://auth/`), user info, a backslash, whitespace or a control
character is refused before any request, whatever a parser would make of it.
"""

from __future__ import annotations

import ipaddress
from typing import Final
from urllib.parse import urlsplit

__all__ = ["DEFAULT_API_BASE", "check_base_url"]

DEFAULT_API_BASE: Final = "https://api.anthropic.com"
# Characters that end a base URL's path, or that parsers read differently (WHATWG takes `\` for
# `/`; urlsplit drops tabs and newlines): none may appear anywhere in a base.
_FORBIDDEN: Final = frozenset("?#\\") | frozenset(map(chr, range(0x21))) | {"\x7f"}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _refused(name: str) -> ValueError:
    return ValueError(f"{name} must be https://, or http:// to a loopback address")


def check_base_url(url: object, *, name: str = "base URL") -> str:
    """Return the URL without a trailing slash, or raise ValueError (fixed text, URL not quoted)."""
    if not isinstance(url, str) or not url or not _FORBIDDEN.isdisjoint(url):
        raise _refused(name)
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port  # a malformed port raises here
    except ValueError:
        parts = None  # raised below, outside the handler: no __context__ quotes the URL
    if parts is None:
        raise _refused(name)
    if parts.username is not None or parts.password is not None or not host:
        raise _refused(name)
    if parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host)):
        return url.rstrip("/")
    raise _refused(name)
