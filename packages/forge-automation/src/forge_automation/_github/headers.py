"""The headers every request to GitHub carries: the pinned API version and the media type.

Imports nothing: forge-cli pr-status builds its first request's argv before the library loads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["API_VERSION", "JSON_ACCEPT", "graphql_headers", "rest_headers"]

# Pinned here, not left to gh: gh sends this header by default only from 2.88 on.
API_VERSION = "2022-11-28"
JSON_ACCEPT = "application/vnd.github+json"


def rest_headers(
    accept: str = JSON_ACCEPT, extra: Iterable[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """Return a REST request's headers: Accept, the API version, then `extra`."""
    return [("Accept", accept), ("X-GitHub-Api-Version", API_VERSION), *extra]


def graphql_headers() -> list[tuple[str, str]]:
    """Return a GraphQL request's headers (the API version; gh sets the rest)."""
    return [("X-GitHub-Api-Version", API_VERSION)]
