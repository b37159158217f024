"""How a batch of changed paths becomes one `change` event: cut at the cap with its count, and
made relative to the watch root exactly as pathlib would (a fast path slices clean paths)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from local_daemon._daemon import _relative
from local_daemon._events import MAX_CHANGE_PATHS, change_event_data


@pytest.mark.parametrize(
    ("count", "limit", "expected"),
    [
        (0, 1000, {"paths": []}),
        (1, 1000, {"paths": ["p0000"]}),
        (1000, 1000, {"paths": [f"p{n:04d}" for n in range(1000)]}),
        (
            1001,
            1000,
            {"paths": [f"p{n:04d}" for n in range(1000)], "truncated": True, "count": 1001},
        ),
        (5, 2, {"paths": ["p0000", "p0001"], "truncated": True, "count": 5}),
        (2, 2, {"paths": ["p0000", "p0001"]}),
    ],
)
def test_change_event_data_cuts_at_the_limit(
    count: int, limit: int, expected: dict[str, Any]
) -> None:
    paths = [f"p{n:04d}" for n in range(count)]
    data = change_event_data(paths, limit=limit)
    assert data == expected
    # The common case keeps its exact shape and key order on the wire.
    if count <= limit:
        assert json.dumps(data, separators=(",", ":")).startswith('{"paths":[')
        assert list(data) == ["paths"]


def test_change_event_data_default_limit() -> None:
    assert MAX_CHANGE_PATHS == 1000
    paths = [str(n) for n in range(MAX_CHANGE_PATHS + 1)]
    assert change_event_data(paths[:-1]) == {"paths": paths[:-1]}
    assert change_event_data(paths)["count"] == MAX_CHANGE_PATHS + 1


@pytest.mark.parametrize(
    "changed",
    [
        ["/r/oot/a.txt", "/r/oot/d/b.txt", "/r/oot/d/", "/r/oot", "/r/oot/"],
        ["/r/oot/a//b", "/r/oot/./a", "/r/oot/a/./b", "/r/oot/a/.", "/r/oot/.", "/r/oot/.."],
        ["/r/ootx/a", "/r/other/a", "/r", "relative/a", "/r/oot/a/../b", "/r/oot/ é/\\x"],
    ],
)
def test_relative_paths_match_pathlib(changed: list[str]) -> None:
    def by_pathlib(root: Path, paths: list[str]) -> list[str]:
        out = []
        for path in paths:
            with contextlib.suppress(ValueError):
                out.append(Path(path).relative_to(Path(os.path.abspath(root))).as_posix())
        return out

    for root in (Path("/r/oot"), Path("/r/oot/"), Path("/")):
        assert _relative(root, changed) == by_pathlib(root, changed)
