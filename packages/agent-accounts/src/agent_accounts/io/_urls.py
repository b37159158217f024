"""Base URLs: only https, or plain http to a loopback address, so no token travels in clear text."""

from __future__ import annotations

import ipaddress
from typing import Final
from urllib.parse import urlsplit

__all__ = ["DEFAULT_API_BASE", "check_base_url"]

DEFAULT_API_BASE: Final = "https://api.anthropic.com"
_REFUSED: Final = "base URL must be https://, or http:// to a loopback address"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> str:
    """Return the URL without a trailing slash, or raise ValueError (fixed text, URL not quoted)."""
    if not isinstance(url, str):
        raise ValueError(_REFUSED)
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port  # a malformed port raises here
    except ValueError:
        parts = None  # raised below, outside the handler: no __context__ quotes the URL
    if parts is None:
        raise ValueError(_REFUSED)
    if parts.username or parts.password or parts.query or parts.fragment or not host:
        raise ValueError(_REFUSED)
    if parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host)):
        return url.rstrip("/")
    raise ValueError(_REFUSED)
