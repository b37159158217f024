"""`probe_health`: ask a daemon's `/health` with the standard library only.

`http.client` (with `email` and `ssl` under it, about half of `import local_daemon`) is imported
by the first probe, not with the package.
"""

from __future__ import annotations

from typing import Any

from ._json import parse_json

__all__ = ["probe_health"]

_MAX_BODY = 1024 * 1024


def probe_health(
    port: int, *, host: str = "127.0.0.1", timeout: float = 1.0
) -> dict[str, Any] | None:
    """GET `/health`; return the document on 200, None on any failure (503 starting included)."""
    import http.client

    target = f"[{host}]" if ":" in host and not host.startswith("[") else host
    connection = http.client.HTTPConnection(target.strip("[]"), port, timeout=timeout)
    try:
        connection.request(
            "GET", "/health", headers={"Host": f"{target}:{port}", "Accept": "application/json"}
        )
        response = connection.getresponse()
        body = response.read(_MAX_BODY + 1)
        if response.status != 200 or len(body) > _MAX_BODY:
            return None
        document = parse_json(body)
    except Exception:  # "null on any failure"
        return None
    finally:
        connection.close()
    return document if isinstance(document, dict) else None
