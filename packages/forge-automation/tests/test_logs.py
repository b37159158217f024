"""CI log extraction over recorded GitHub-Actions-style logs of each runner (ANSI + timestamps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge_automation import ForgeInputError, job_log_tail, summarize_job_log

# The spec: "`ci-failures` jobs | at most 5; tail 20 lines by default".
DEFAULT_TAIL_LINES = 20

LOGS = Path(__file__).parent / "data" / "logs"

# log file -> (runner, first failing-test line, summary lines that must be picked)
EXPECTED: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "pytest.log": (
        "pytest",
        "FAILED tests/test_calc.py::test_add - assert 3 == 4",
        (
            "tests/test_calc.py .F.                                                   [ 60%]",
            "========================= 1 failed, 4 passed in 0.07s ==========================",
        ),
    ),
    "unittest.log": (
        "unittest",
        "FAIL: test_add (test_calc.CalcTest.test_add)",
        ("Ran 3 tests in 0.001s", "FAILED (failures=1)"),
    ),
    "jest.log": (
        "jest",
        "  ● sum › adds negative numbers",
        (
            " FAIL  src/sum.test.js",
            "Test Suites: 1 failed, 1 passed, 2 total",
            "Tests:       1 failed, 3 passed, 4 total",
        ),
    ),
    "vitest.log": (
        "vitest",
        " FAIL  src/sum.test.ts > sum > adds negative numbers",
        (
            " ❯ src/sum.test.ts (3 tests | 1 failed) 5ms",
            " Test Files  1 failed | 1 passed (2)",
            "      Tests  1 failed | 4 passed (5)",
        ),
    ),
    "mocha.log": ("mocha", "    1) subtracts", ("  2 passing (8ms)", "  1 failing")),
    "node-test.log": (
        "node",
        "  ✖ subtracts (1.203ms)",
        ("ℹ tests 2", "ℹ pass 1", "ℹ fail 1"),
    ),
    "node-tap.log": ("node", "    not ok 2 - subtracts", ("# tests 2", "# pass 1", "# fail 1")),
    "go-test.log": ("go", "--- FAIL: TestSub (0.00s)", ("FAIL\texample.com/calc\t0.004s",)),
    "cargo-test.log": (
        "cargo",
        "test tests::subtracts ... FAILED",
        (
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out;"
            " finished in 0.00s",
            "error: test failed, to rerun pass `--lib`",
        ),
    ),
    "rspec.log": (
        "rspec",
        "  1) Calculator adds",
        ("2 examples, 1 failure", "rspec ./spec/calculator_spec.rb:4 # Calculator adds"),
    ),
    "surefire.log": (
        "surefire",
        "[ERROR] com.example.CalcTest.testSub -- Time elapsed: 0.008 s <<< FAILURE!",
        (
            "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0",
            "[ERROR]   CalcTest.testSub:14 expected: <2> but was: <1>",
            "[INFO] BUILD FAILURE",
        ),
    ),
}


def read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_every_recorded_log_has_ansi_and_actions_timestamps() -> None:
    names = sorted(p.name for p in LOGS.glob("*.log"))
    assert names == sorted([*EXPECTED, "unrecognised.log"])
    for name in names:
        text = read(name)
        assert "\x1b[" in text or name in ("unittest.log", "go-test.log", "node-tap.log")
        assert all(line.lstrip("\ufeff")[:28].endswith("Z") for line in text.splitlines()), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_runner_is_recognised(name: str) -> None:
    runner, first, summary = EXPECTED[name]
    result = summarize_job_log(read(name))
    assert result.recognised
    assert result.runner == runner
    assert result.first_failure == first
    for line in summary:
        assert line in result.summary, (line, result.summary)
    for line in (*result.summary, *result.tail, first):
        assert "\x1b" not in line
        assert not line.startswith("2026-01-02T")
    assert result.tail[-1] == "##[error]Process completed with exit code " + (
        "101." if name == "cargo-test.log" else "1."
    )


def test_coverage_errors_are_picked() -> None:
    assert summarize_job_log(read("pytest.log")).coverage == (
        "FAIL Required test coverage of 90% not reached. Total coverage: 83.33%",
    )
    assert summarize_job_log(read("jest.log")).coverage == (
        'Jest: "global" coverage threshold for lines (90%) not met: 85.71%',
    )
    assert summarize_job_log(read("rspec.log")).coverage == (
        "Line coverage (83.33%) is below the expected minimum coverage (90.00%).",
    )
    assert summarize_job_log(read("go-test.log")).coverage == ()


def test_obsolete_snapshot_lines_are_picked() -> None:
    snapshots = summarize_job_log(read("jest.log")).snapshots
    assert (
        " › 1 snapshot obsolete from 1 test suite. To remove it, run `npm test -- -u`." in snapshots
    )
    assert summarize_job_log(read("pytest.log")).snapshots == ()


def test_an_unrecognised_log_shows_its_tail_marked() -> None:
    result = summarize_job_log(read("unrecognised.log"))
    assert not result.recognised
    assert result.runner is None
    assert result.first_failure is None
    assert len(result.tail) == DEFAULT_TAIL_LINES
    assert result.tail[-1] == "##[error]Process completed with exit code 1."
    shown = result.display_lines()
    assert shown[0] == f"unrecognised log; last {DEFAULT_TAIL_LINES} lines:"
    assert result.to_json()["recognised"] is False


def test_display_lines_put_the_failure_first_then_the_tail() -> None:
    result = summarize_job_log(read("go-test.log"), lines=3)
    shown = result.display_lines()
    assert shown[0] == "--- FAIL: TestSub (0.00s)"
    assert shown[-4] == "last 3 lines:"
    assert shown[-3:] == result.tail
    assert result.to_json()["firstFailure"] == "--- FAIL: TestSub (0.00s)"


def test_tail_length_follows_lines() -> None:
    text = read("cargo-test.log")
    assert len(job_log_tail(text)) == DEFAULT_TAIL_LINES
    assert job_log_tail(text, lines=1) == ("##[error]Process completed with exit code 101.",)
    whole = job_log_tail(text, lines=10_000)
    assert DEFAULT_TAIL_LINES < len(whole) < 10_000
    assert whole[-DEFAULT_TAIL_LINES:] == job_log_tail(text)


@pytest.mark.parametrize("lines", [0, -1, True, 2.5])
def test_bad_line_counts_are_refused(lines: object) -> None:
    with pytest.raises(ForgeInputError):
        job_log_tail("x", lines=lines)  # type: ignore[arg-type]


def test_cleaning_strips_timestamps_ansi_osc_groups_and_overwritten_progress() -> None:
    raw = (
        "\ufeff2026-01-02T03:04:05.1234567Z ##[group]Run make\n"
        "2026-01-02T03:04:05.1234568Z \x1b]8;;https://x\x07link\x1b]8;;\x07 \x1b[1;31mred\x1b[0m\n"
        "2026-01-02T03:04:05.1234569Z progress 10%\rprogress 100%\r\n"
        "2026-01-02T03:04:05Z ##[endgroup]\n"
        "plain line without a stamp\n\n\n"
    )
    assert list(job_log_tail(raw, lines=100)) == [
        "Run make",
        "link red",
        "progress 100%",
        "plain line without a stamp",
    ]


def test_secrets_in_a_log_are_cut() -> None:
    token = "ghs_" + "Q" * 36
    result = summarize_job_log(f"FAILED tests/t.py::test_x - {token}\nGH_TOKEN={token}\n")
    assert result.first_failure == "FAILED tests/t.py::test_x - [redacted]"
    assert token not in repr(result)


def test_a_huge_single_line_log_is_handled() -> None:
    result = summarize_job_log("=" * 2_000_000 + " 1 failed\n" + "FAIL " * 200_000)
    assert result.tail
