"""`squash-message` as a real subprocess: JSON in, JSON out, exit 65 on bad input, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("squash-message")
GOOD: dict[str, object] = {
    "title": "Add retry",
    "body": "Retries the call.",
    "prNumber": 12,
    "taskIds": ["T-7"],
    "commits": [{"subject": "Add backoff", "body": "Wraps\nthe call."}],
}


def squash(stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    program = str(SCRIPT) if SCRIPT.exists() else shutil.which("squash-message")
    assert program, "the squash-message console script is installed with the package"
    return subprocess.run(
        [program, *args], input=stdin, capture_output=True, timeout=60, check=False
    )


def test_prints_subject_and_body() -> None:
    done = squash(json.dumps(GOOD).encode())
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert json.loads(done.stdout) == {
        "subject": "Add retry (T-7) (#12)",
        "body": (
            "## Summary\n\nRetries the call.\n\n## Changes\n\n- **Add backoff.** Wraps the call."
            "\n\nRefs: T-7, #12"
        ),
    }


def test_unicode_survives_and_a_lone_surrogate_is_escaped() -> None:
    request = {**GOOD, "title": "Zürich ✓"}
    done = squash(json.dumps(request, ensure_ascii=False).encode())
    assert json.loads(done.stdout)["subject"].startswith("Zürich ✓")
    done = squash(json.dumps({**GOOD, "title": "a\ud800b"}).encode())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["subject"].startswith("a\ud800b")


def _mutated(**changes: object) -> bytes:
    request = dict(GOOD)
    for key, value in changes.items():
        if value is _DROP:
            del request[key]
        else:
            request[key] = value
    return json.dumps(request).encode()


_DROP = object()

BAD: list[tuple[str, bytes, str]] = [
    ("empty", b"", "not JSON"),
    ("truncated", b'{"title": ', "not JSON"),
    ("not utf-8", b'{"title": "\xff"}', "not UTF-8"),
    ("array", b"[]", "JSON object"),
    ("deep", b"[" * 100_000, "not JSON"),
    ("missing title", _mutated(title=_DROP), "missing field title"),
    ("missing body", _mutated(body=_DROP), "missing field body"),
    ("missing prNumber", _mutated(prNumber=_DROP), "missing field prNumber"),
    ("missing taskIds", _mutated(taskIds=_DROP), "missing field taskIds"),
    ("missing commits", _mutated(commits=_DROP), "missing field commits"),
    ("title not string", _mutated(title=5), "field title must be a string"),
    ("prNumber string", _mutated(prNumber="12"), "field prNumber"),
    ("prNumber bool", _mutated(prNumber=True), "field prNumber"),
    ("prNumber zero", _mutated(prNumber=0), "field prNumber"),
    ("prNumber float", _mutated(prNumber=1.5), "field prNumber"),
    ("taskIds string", _mutated(taskIds="T-1"), "field taskIds"),
    ("taskIds item", _mutated(taskIds=["T-1", 2]), "field taskIds[1]"),
    ("commits object", _mutated(commits={}), "field commits"),
    ("commit not object", _mutated(commits=["x"]), "field commits[0]"),
    ("commit no subject", _mutated(commits=[{"body": ""}]), "missing field commits[0].subject"),
    ("commit no body", _mutated(commits=[{"subject": "s"}]), "missing field commits[0].body"),
    ("commit body null", _mutated(commits=[{"subject": "s", "body": None}]), "commits[0].body"),
    ("huge number", b'{"prNumber": 1' + b"0" * 5000 + b"}", "not JSON"),
]


@pytest.mark.parametrize(("stdin", "expected"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_exits_65_with_one_line(stdin: bytes, expected: str) -> None:
    done = squash(stdin)
    assert done.returncode == 65
    assert done.stdout == b""
    err = done.stderr.decode()
    assert err.startswith("squash-message: ")
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert expected in err
    assert "Traceback" not in err


def test_arguments_are_a_usage_error_and_help_exits_0() -> None:
    done = squash(b"", "--frobnicate")
    assert done.returncode == 64
    assert b"Traceback" not in done.stderr
    done = squash(b"", "--help")
    assert done.returncode == 0
    assert b"usage: squash-message" in done.stdout


def test_a_closed_stdout_is_quiet() -> None:
    program = str(SCRIPT) if SCRIPT.exists() else shutil.which("squash-message")
    assert program
    with subprocess.Popen(
        [program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stderr is not None
        proc.stdout.close()
        big = {**GOOD, "body": "x" * 1_000_000}
        proc.stdin.write(json.dumps(big).encode())
        proc.stdin.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert code == 0
    assert b"Traceback" not in err
    assert err == b""


def test_version_names_the_tool_and_the_installed_version() -> None:
    from importlib.metadata import version

    done = squash(b"", "--version")
    assert (done.returncode, done.stderr) == (0, b"")
    expected = f"squash-message {version('forge-automation')}\n"
    assert done.stdout.decode() == expected
