"""A task file read back is a task or is skipped, whatever it holds: `TaskStore.load` never
raises on a file it cannot trust, never deletes one (only expired tasks and cut-short writes go),
and what it keeps is a finished task with a ttl within bounds."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from local_daemon._tasks import TaskStore

TASK_ID = "T" * 24
NAME = f"{TASK_ID}.json"
_VALID: dict[str, Any] = {
    "version": 1,
    "owner": "loopback",
    "task": {
        "taskId": TASK_ID,
        "status": "completed",
        "createdAt": "2999-01-01T00:00:00Z",
        "lastUpdatedAt": "2999-01-01T00:00:00Z",
        "ttl": 60_000,
    },
    "result": {"content": [], "structuredContent": {"ok": True, "data": 1}, "isError": False},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@st.composite
def mutated_records(draw: st.DrawFn) -> bytes:
    """A valid record with one of its fields (or the task's) replaced by any JSON value."""
    record = json.loads(json.dumps(_VALID))
    where = draw(st.sampled_from(["top", "task"]))
    target = record if where == "top" else record["task"]
    key = draw(st.sampled_from(sorted(target)))
    target[key] = draw(json_values)
    return json.dumps(record).encode()


contents = st.one_of(
    mutated_records(),
    st.binary(max_size=2048),
    st.sampled_from([b"", b"null", b"[]", b"{}", b"[" * 100_000, b'{"version": 1}']),
)


def _error_result(envelope: Any) -> dict[str, Any]:
    return {"content": [], "structuredContent": envelope, "isError": True}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents)
def test_load_keeps_a_task_or_skips_the_file(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "tasks"
        directory.mkdir(mode=0o700)
        path = directory / NAME
        path.write_bytes(data)
        os.chmod(path, 0o600)
        store = TaskStore(directory)
        store.load(_error_result)
        kept = store.tasks()
        assert len(kept) <= 1
        for task in kept:
            assert task.task_id == TASK_ID
            assert task.terminal
            assert 0 < task.ttl_ms <= store.limits.max_ttl_ms
            assert task.result is None or isinstance(task.result, dict)
            # Its owner as the file names it, or nobody's (no caller's context is "").
            assert store.get(TASK_ID, "loopback") in (task, None)
            assert store.get(TASK_ID, "") is None
        if not kept:
            assert path.read_bytes() == data  # skipped, as it was


def test_the_valid_record_is_kept() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        path = directory / NAME
        path.write_bytes(json.dumps(_VALID).encode())
        os.chmod(path, 0o600)
        store = TaskStore(directory)
        store.load(_error_result)
        assert [task.task_id for task in store.tasks()] == [TASK_ID]
        assert store.get(TASK_ID, "loopback") is not None
        assert store.get(TASK_ID, "bearer") is None
        assert store.tasks("bearer") == []


def test_a_record_naming_no_owner_is_nobodys() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        path = directory / NAME
        record = {key: value for key, value in _VALID.items() if key != "owner"}
        path.write_bytes(json.dumps(record).encode())
        os.chmod(path, 0o600)
        store = TaskStore(directory)
        store.load(_error_result)
        assert [task.task_id for task in store.tasks()] == [TASK_ID]  # kept until it expires
        for context in ("loopback", "bearer", ""):
            assert store.get(TASK_ID, context) is None
            assert store.tasks(context) == []
