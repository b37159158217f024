"""CI job logs: strip ANSI codes and timestamps, find the line that explains a red build.

`summarize_job_log` recognises pytest, unittest, jest, vitest, mocha, node's test runner (spec and
TAP reporters), go test, cargo test, RSpec and Maven Surefire. It picks the first failing-test
line, the test-file and test summary lines, coverage-threshold errors and obsolete-snapshot lines;
a log with none of those is `unrecognised` and shows only its tail. Every regex is anchored or
starts with a literal and has no nested repetition, so a log of any size is read in linear time.
Token-shaped strings are cut from everything returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._errors import ForgeInputError
from ._redact import redact_forge_secrets

__all__ = [
    "DEFAULT_TAIL_LINES",
    "JobLogSummary",
    "clean_job_log",
    "job_log_tail",
    "summarize_job_log",
]

DEFAULT_TAIL_LINES = 20
# Past this many summary (or coverage, snapshot) lines the rest adds noise, not signal.
MAX_PICKED = 40
# Lines are matched on this prefix only: a minified bundle on one line must not cost much.
MATCH_PREFIX = 4096

_TIMESTAMP = re.compile(r"\A\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z ?")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_GROUP_MARKER = re.compile(r"\A##\[(?:group|endgroup)\]")

# (runner, pattern) for lines that name one failing test, best first. Tier 2 is read only when
# tier 1 found nothing: jest's "✕ name" comes before its fuller "● suite › name" block.
_FIRST_TIER1: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pytest", re.compile(r"(?:FAILED|ERROR) \S+::\S")),
    ("pytest", re.compile(r"\S+::\S+ (?:FAILED|ERROR)\b")),
    ("unittest", re.compile(r"(?:FAIL|ERROR): \S+ \(\S+\)")),
    ("jest", re.compile(r"\s*● \S.* › \S")),
    ("vitest", re.compile(r"\s*FAIL\s+\S+ > \S")),
    ("node", re.compile(r"\s*✖ (?!failing tests:)\S")),
    ("node", re.compile(r"\s*not ok \d+ - \S")),
    ("go", re.compile(r"\s*--- FAIL: \S")),
    ("cargo", re.compile(r"test \S+ \.\.\. FAILED\s*\Z")),
    ("mocha/rspec", re.compile(r"\s+\d+\) \S")),
    ("surefire", re.compile(r"\[ERROR\] (?!Tests run:)\S.*<<< (?:FAILURE|ERROR)!")),
)
_FIRST_TIER2: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("jest", re.compile(r"\s*✕ \S")),
    ("vitest", re.compile(r"\s*× \S")),
    ("pytest", re.compile(r"_{3,} \S.* _{3,}\s*\Z")),
)
# Test-file and whole-run summary lines; the runner is read from the first one that matches.
_SUMMARY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pytest", re.compile(r"=+ (?:no tests ran|\d+ \w+(?:, \d+ \w+)*) in [\d.]+s")),
    ("pytest", re.compile(r"\S+\.py [.sxX]*[FE][.FEsxX]*\s*(?:\[\s*\d+%\])?\s*\Z")),
    ("unittest", re.compile(r"Ran \d+ tests? in [\d.]+s\s*\Z")),
    ("unittest", re.compile(r"FAILED \((?:failures|errors)=\d+")),
    ("jest", re.compile(r"\s*FAIL\s+\S+(?:\s+\([\d.]+ m?s\))?\s*\Z")),
    ("jest", re.compile(r"(?:Test Suites|Tests|Snapshots):\s+\d+ ")),
    ("vitest", re.compile(r"\s*❯ \S+\s+\(\d+ tests? \| \d+ failed")),
    ("vitest", re.compile(r"\s*(?:Test Files|Tests)\s+\d+ (?:failed|passed)")),
    ("mocha", re.compile(r"\s*\d+ (?:passing \(\S+\)|failing|pending)\s*\Z")),
    ("node", re.compile(r"[ℹ#] (?:tests|suites|pass|fail|cancelled|skipped|todo) \d+\s*\Z")),
    ("go", re.compile(r"FAIL\s+\S+\s+(?:[\d.]+s|\[build failed\]|\[setup failed\])")),
    ("cargo", re.compile(r"test result: FAILED\.")),
    ("cargo", re.compile(r"error: test failed, to rerun pass")),
    ("rspec", re.compile(r"\d+ examples?, \d+ failures?")),
    ("rspec", re.compile(r"rspec \./\S+:\d+ # ")),
    ("surefire", re.compile(r"\[ERROR\] Tests run: \d+, Failures: \d+")),
    ("surefire", re.compile(r"\[ERROR\]\s{2,}\S+\.\S+:\d+ ")),
    ("surefire", re.compile(r"\[INFO\] BUILD FAILURE")),
)
# Coverage and snapshot lines are found with str.find on the lower-cased line: linear, no regex.
_COVERAGE_FAILS = (
    "not reached",
    "not met",
    "does not meet",
    "less than",
    "is below",
    "below the",
    "fail-under",
    "too low",
)


def _is_coverage_error(lower: str) -> bool:
    at = lower.find("coverage")
    if at >= 0 and any(lower.find(phrase, at) >= 0 for phrase in _COVERAGE_FAILS):
        return True
    ratio = lower.find("covered ratio is")
    return ratio >= 0 and lower.find("expected minimum", ratio) >= 0


def _is_snapshot_line(lower: str) -> bool:
    if "snapshot" not in lower:
        return False
    return "obsolete" in lower or "unused" in lower


@dataclass(frozen=True, slots=True, kw_only=True)
class JobLogSummary:
    """What a failed job's log says: the failing test, summaries, coverage, snapshots and tail."""

    runner: str | None
    first_failure: str | None
    summary: tuple[str, ...]
    coverage: tuple[str, ...]
    snapshots: tuple[str, ...]
    tail: tuple[str, ...]

    @property
    def recognised(self) -> bool:
        """Return whether any failure, summary, coverage or snapshot line was found."""
        return bool(self.first_failure or self.summary or self.coverage or self.snapshots)

    def display_lines(self) -> tuple[str, ...]:
        """Return the picked lines, then the tail, marked `unrecognised` when nothing matched."""
        picked: list[str] = []
        if self.first_failure is not None:
            picked.append(self.first_failure)
        for line in (*self.summary, *self.coverage, *self.snapshots):
            if line not in picked:
                picked.append(line)
        header = (
            f"last {len(self.tail)} lines:"
            if self.recognised
            else f"unrecognised log; last {len(self.tail)} lines:"
        )
        return (*picked, header, *self.tail)

    def to_json(self) -> dict[str, object]:
        """Return the summary as a JSON object with camelCase keys."""
        return {
            "runner": self.runner,
            "recognised": self.recognised,
            "firstFailure": self.first_failure,
            "summary": list(self.summary),
            "coverage": list(self.coverage),
            "snapshots": list(self.snapshots),
            "tail": list(self.tail),
        }


def clean_job_log(text: str) -> list[str]:
    """Return the log's lines without timestamps, ANSI codes, group markers or overwritten text."""
    lines: list[str] = []
    for raw in redact_forge_secrets(text).split("\n"):
        line = _TIMESTAMP.sub("", raw, count=1)
        line = _ANSI.sub("", line)
        if "\r" in line:
            # A progress bar rewrites its line with CR: the terminal shows the last segment.
            segments = [s for s in line.split("\r") if s]
            line = segments[-1] if segments else ""
        if line.startswith("##["):
            line = _GROUP_MARKER.sub("", line)
            if not line:
                # An endgroup marker alone carries nothing to show.
                continue
        lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return lines


def job_log_tail(text: str, *, lines: int = DEFAULT_TAIL_LINES) -> tuple[str, ...]:
    """Return the last `lines` lines of the cleaned log."""
    _check_lines(lines)
    return tuple(clean_job_log(text)[-lines:])


def summarize_job_log(text: str, *, lines: int = DEFAULT_TAIL_LINES) -> JobLogSummary:
    """Find the first failing test, summary, coverage and obsolete-snapshot lines, and the tail."""
    _check_lines(lines)
    cleaned = clean_job_log(text)
    runner: str | None = None
    first: str | None = None
    first_runner: str | None = None
    summary: list[str] = []
    coverage: list[str] = []
    snapshots: list[str] = []
    tier2: tuple[str, str] | None = None
    for line in cleaned:
        probe = line[:MATCH_PREFIX]
        if first is None:
            found = _first_match(_FIRST_TIER1, probe)
            if found is not None:
                first_runner, first = found, line
            elif tier2 is None:
                found = _first_match(_FIRST_TIER2, probe)
                if found is not None:
                    tier2 = (found, line)
        summary_runner = _first_match(_SUMMARY, probe)
        if summary_runner is not None:
            runner = runner or summary_runner
            _pick(summary, line)
        lower = probe.lower()
        if _is_coverage_error(lower):
            _pick(coverage, line)
        if _is_snapshot_line(lower):
            _pick(snapshots, line)
    if first is None and tier2 is not None:
        first_runner, first = tier2
    return JobLogSummary(
        runner=runner or first_runner,
        first_failure=first,
        summary=tuple(summary),
        coverage=tuple(coverage),
        snapshots=tuple(snapshots),
        tail=tuple(cleaned[-lines:]),
    )


def _first_match(patterns: tuple[tuple[str, re.Pattern[str]], ...], line: str) -> str | None:
    for runner, pattern in patterns:
        if pattern.match(line):
            return runner
    return None


def _pick(picked: list[str], line: str) -> None:
    if len(picked) < MAX_PICKED and line not in picked:
        picked.append(line)


def _check_lines(lines: object) -> None:
    if not isinstance(lines, int) or isinstance(lines, bool) or lines < 1:
        raise ForgeInputError("lines", "must be a positive integer")
