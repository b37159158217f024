"""Invariant: a page that says there is more without a cursor is malformed, never the last page.

White-box: the shared GraphQL page reader (`_github.shape._next_cursor`, used by the reviews and review
thread reads) and the backstop's range follower.
"""

from __future__ import annotations

from typing import Any

import pytest

from forge_automation import BACKSTOP_CAPS, ForgeCliError
from forge_automation._backstop import _Reader
from forge_automation._github import shape


@pytest.mark.parametrize(
    ("info", "cursor"),
    [
        ({"hasNextPage": False, "endCursor": None}, None),
        ({"hasNextPage": False, "endCursor": "Y3Vy"}, None),
        ({"hasNextPage": True, "endCursor": "Y3Vy"}, "Y3Vy"),
    ],
)
def test_a_page_with_a_cursor_or_without_more_reads(info: Any, cursor: str | None) -> None:
    assert shape.next_cursor(info) == cursor


@pytest.mark.parametrize(
    "info",
    [
        {"hasNextPage": True, "endCursor": None},
        {"hasNextPage": True, "endCursor": ""},
        {"hasNextPage": True},
        {"hasNextPage": "true", "endCursor": "Y3Vy"},
        {"endCursor": "Y3Vy"},
        None,
    ],
)
def test_more_without_a_cursor_is_malformed(info: Any) -> None:
    with pytest.raises(shape.SHAPE_ERRORS):  # the wire maps each to "malformed"
        shape.next_cursor(info)


def test_the_backstop_never_reads_more_without_a_cursor_as_done() -> None:
    asked: list[str] = []

    def fetch(after: str) -> Any:
        asked.append(after)
        return {"nodes": [], "pageInfo": {"hasNextPage": False}}

    reader = _Reader(api=lambda q, v: {}, owner="acme", name="widgets", caps=BACKSTOP_CAPS)
    page = {"nodes": [{"n": 1}], "pageInfo": {"hasNextPage": True, "endCursor": None}}
    with pytest.raises(ForgeCliError) as caught:
        reader.follow("reviews", 5, page, fetch)
    assert caught.value.kind == "malformed"
    assert asked == []
