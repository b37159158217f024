"""How the test forge's REST handlers answer: an early answer, GitHub's error body, pagination."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from fakeforge.state import API_HOST

__all__ = ["Answer", "error", "paginate"]


class Answer(Exception):
    """Raised by a handler to answer at once with `status`, `body` and `headers`."""

    def __init__(self, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def error(status: int, message: str, **extra: Any) -> Answer:
    """Return GitHub's kind of error answer: `message` and a documentation URL."""
    body = {"message": message, "documentation_url": "https://docs.github.com/rest", **extra}
    return Answer(status, body)


def paginate(
    request: web.Request, rows: Sequence[Any], *, default: int = 30, cap: int | None = None
) -> tuple[list[Any], dict[str, str]]:
    """Return one page of `rows` as the request asks for it, with GitHub's `Link` header."""
    per_page = min(int(request.query.get("per_page", default)), 100)
    page = max(int(request.query.get("page", 1)), 1)
    if cap is not None:
        rows = rows[:cap]
    start = (page - 1) * per_page
    chunk = list(rows[start : start + per_page])
    headers: dict[str, str] = {}
    last = max((len(rows) + per_page - 1) // per_page, 1)
    if page < last:
        links = []
        for rel, number in (("next", page + 1), ("last", last)):
            query = {**request.query, "page": str(number)}
            links.append(f'<http://{API_HOST}{request.path}?{urlencode(query)}>; rel="{rel}"')
        headers["Link"] = ", ".join(links)
    return chunk, headers
