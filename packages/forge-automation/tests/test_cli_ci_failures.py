"""forge-cli ci-failures as a real subprocess through the real gh, on recorded runner logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakeforge import ForgeServer, RepoState

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
LOGS = Path(__file__).parent / "data" / "logs"
APP_TOKEN = "ghs_cifailurescanary000000000000000000"

# Recorded log -> its first failing-test line, as ci-failures must show it.
FIRST_FAILURE = {
    "pytest.log": "FAILED tests/test_calc.py::test_add - assert 3 == 4",
    "unittest.log": "FAIL: test_add (test_calc.CalcTest.test_add)",
    "jest.log": "  ● sum › adds negative numbers",
    "vitest.log": " FAIL  src/sum.test.ts > sum > adds negative numbers",
    "mocha.log": "    1) subtracts",
    "node-test.log": "  ✖ subtracts (1.203ms)",
    "node-tap.log": "    not ok 2 - subtracts",
    "go-test.log": "--- FAIL: TestSub (0.00s)",
    "cargo-test.log": "test tests::subtracts ... FAILED",
    "rspec.log": "  1) Calculator adds",
    "surefire.log": "[ERROR] com.example.CalcTest.testSub -- Time elapsed: 0.008 s <<< FAILURE!",
}


def cli(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=120,
        check=False,
    )


def _pr_with_logs(repo: RepoState, number: int, logs: list[str]) -> str:
    head = repo.add_commit(f"head{number}")
    repo.add_pr(number, head_ref=f"f{number}", head_sha=head)
    for i, name in enumerate(logs):
        repo.add_run(
            head,
            name.removesuffix(".log"),
            "failure",
            run_id=number * 100 + i,
            log=(LOGS / name).read_bytes(),
        )
    return head


def _blocks(stdout: str) -> dict[str, list[str]]:
    """Split human output into FAILED blocks keyed by job name."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in stdout.splitlines():
        if line.startswith("FAILED "):
            current = []
            blocks[line.split()[1]] = current
        current.append(line)
    return blocks


@pytest.mark.parametrize(
    "logs",
    [sorted(FIRST_FAILURE)[:5], sorted(FIRST_FAILURE)[5:10], sorted(FIRST_FAILURE)[10:]],
)
def test_each_runner_shows_its_first_failing_line(server: ForgeServer, logs: list[str]) -> None:
    repo = server.state.repo(REPO)
    _pr_with_logs(repo, 1, logs)
    done = cli(server, "ci-failures", f"{REPO}#1")
    assert (done.returncode, done.stderr) == (0, "")
    blocks = _blocks(done.stdout)
    assert list(blocks) == [name.removesuffix(".log") for name in logs]
    for i, name in enumerate(logs):
        job = name.removesuffix(".log")
        lines = blocks[job]
        url = f"http://github.localhost/{REPO}/actions/runs/1/job/{100 + i}"
        assert lines[0] == f"FAILED {job} {url}"
        # The first failing line comes straight after the FAILED line; no ANSI, no timestamps.
        assert lines[1] == "  " + FIRST_FAILURE[name]
        assert "\x1b" not in "".join(lines)
        assert not any(line.lstrip().startswith("2026-01-02T") for line in lines)
        assert any(line.startswith("  last ") and line.endswith(" lines:") for line in lines)


def test_at_most_five_jobs_and_the_rest_skipped(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    logs = sorted(FIRST_FAILURE)[:7]
    head = _pr_with_logs(repo, 2, logs)
    repo.add_run(head, "green-job", "success", run_id=299, log=b"all good\n")
    repo.add_run(head, "other-app", "failure", app_id=4242, run_id=298, log=b"x\n")
    done = cli(server, "ci-failures", f"{REPO}#2")
    assert done.returncode == 0
    assert len(_blocks(done.stdout)) == 5
    names = [n.removesuffix(".log") for n in logs]
    assert done.stdout.splitlines()[-1] == (f"SKIPPED 2 more failing jobs: {names[5]}, {names[6]}")
    assert "other-app" not in done.stdout
    assert "green-job" not in done.stdout

    as_json = json.loads(cli(server, "ci-failures", f"{REPO}#2", "--json").stdout)
    assert set(as_json) == {"repo", "number", "headSha", "jobs", "skipped", "runsWithoutJobs"}
    assert as_json["runsWithoutJobs"] == []
    assert (as_json["repo"], as_json["number"], as_json["headSha"]) == (REPO, 2, head)
    assert [j["name"] for j in as_json["jobs"]] == names[:5]
    assert [s["name"] for s in as_json["skipped"]] == names[5:]
    first = as_json["jobs"][0]
    assert first["log"]["firstFailure"] == FIRST_FAILURE[logs[0]]
    assert first["lines"][0] == FIRST_FAILURE[logs[0]]


def test_lines_sets_the_tail_and_an_unrecognised_log_is_marked(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    _pr_with_logs(repo, 3, ["unrecognised.log"])
    done = cli(server, "ci-failures", f"{REPO}#3", "--lines", "3")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FAILED unrecognised ")
    assert lines[1:] == [
        "  unrecognised log; last 3 lines:",
        "  npm ERR!",
        "  npm ERR! A complete log of this run can be found in: "
        "/home/runner/.npm/_logs/2026-01-02T03_04_05_123Z-debug-0.log",
        "  ##[error]Process completed with exit code 1.",
    ]


def test_coverage_and_obsolete_snapshot_lines_are_shown(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    _pr_with_logs(repo, 4, ["jest.log"])
    out = cli(server, "ci-failures", f"{REPO}#4", "--lines", "2").stdout
    assert '  Jest: "global" coverage threshold for lines (90%) not met: 85.71%' in out
    assert "  › 1 snapshot obsolete from 1 test suite." in out


def test_one_job_by_id(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = _pr_with_logs(repo, 5, ["go-test.log"])
    done = cli(server, "ci-failures", REPO, "--job", "500", "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert (data["number"], data["headSha"], data["skipped"]) == (None, head, [])
    assert data["jobs"][0]["lines"][0] == FIRST_FAILURE["go-test.log"]
    human = cli(server, "ci-failures", REPO, "--job", "500")
    assert human.stdout.splitlines()[1] == "  " + FIRST_FAILURE["go-test.log"]


def test_no_failing_job_prints_none_found_and_exits_0(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("clean")
    repo.add_pr(6, head_ref="clean", head_sha=head)
    repo.add_run(head, "test", "success")
    done = cli(server, "ci-failures", f"{REPO}#6")
    assert (done.returncode, done.stdout) == (
        0,
        f"no failing built-in CI jobs at {REPO}#6 head {head}\n",
    )
    data = json.loads(cli(server, "ci-failures", f"{REPO}#6", "--json").stdout)
    assert (data["jobs"], data["skipped"]) == ([], [])


def test_an_expired_log_is_reported_not_fatal(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("gone")
    repo.add_pr(7, head_ref="gone", head_sha=head)
    repo.add_run(head, "build", "failure", run_id=700)
    done = cli(server, "ci-failures", f"{REPO}#7")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1] == "  log unavailable (HTTP 404)"


def test_secrets_in_a_log_never_reach_stdout(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("leaky")
    repo.add_pr(8, head_ref="leaky", head_sha=head)
    log = f"FAILED tests/t.py::test_x - token {APP_TOKEN}\n=== 1 failed in 0.1s ===\n"
    repo.add_run(head, "leaky", "failure", run_id=800, log=log.encode())
    for extra in ((), ("--json",)):
        done = cli(server, "ci-failures", f"{REPO}#8", *extra)
        assert done.returncode == 0
        assert APP_TOKEN not in done.stdout + done.stderr
        assert "[redacted]" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        [f"{REPO}#1", "--lines", "0"],
        [f"{REPO}#1", "--lines", "many"],
        [f"{REPO}#1", "--job", "5"],
        [REPO],
        ["not a repo"],
        [f"{REPO}#x"],
        [REPO, "--job", "-3"],
        [REPO, "--job", "abc"],
        [f"{REPO}#1", "--unknown"],
        [],
    ],
)
def test_bad_arguments_exit_2(server: ForgeServer, args: list[str]) -> None:
    done = cli(server, "ci-failures", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("forge-cli: ")
    assert "Traceback" not in done.stderr
    assert server.requests() == []


# -- without a log: annotations and the output summary ---------------------------------------------


def _annotated_run(repo: RepoState, number: int, log: bytes | None) -> None:
    head = repo.add_commit(f"annotated{number}")
    repo.add_pr(number, head_ref=f"a{number}", head_sha=head)
    run = repo.add_run(head, "lint", "failure", run_id=number * 100, log=log)
    run["output"] = {
        "title": "2 errors",
        "summary": f"ruff found problems\n\x1b[31mtoken {APP_TOKEN}\x1b[0m",
        "annotations_count": 3,
    }
    repo.annotations[run["id"]] = [
        {"path": "src/a.py", "start_line": 3, "message": "F401 `os` imported but unused"},
        {
            "path": "src/b.py",
            "start_line": 10,
            "title": "E501",
            "message": "Line too long\nsecond line",
        },
    ]


@pytest.mark.parametrize(
    ("log", "problem"),
    [(None, "log unavailable (HTTP 404)"), (b"", "log empty"), (b"\n  \n", "log empty")],
)
def test_without_a_log_the_annotations_and_summary_are_shown(
    server: ForgeServer, log: bytes | None, problem: str
) -> None:
    repo = server.state.repo(REPO)
    _annotated_run(repo, 9, log)
    done = cli(server, "ci-failures", f"{REPO}#9")
    assert (done.returncode, done.stderr) == (0, "")
    shown = done.stdout.splitlines()
    assert shown[1:-1] == [
        f"  {problem}",
        "  src/a.py:3: F401 `os` imported but unused",
        "  src/b.py:10: E501: Line too long",
        "    second line",
        "  (1 more annotations)",
        "  summary:",
        "    2 errors",
        "    ruff found problems",
    ]
    # gh itself may show an escape as `^[`; no escape byte and no token reaches the terminal.
    assert shown[-1].startswith("    ")
    assert "token [redacted]" in shown[-1]
    assert len([r for r in server.requests("GET") if r.path.endswith("/annotations")]) == 1
    data = json.loads(cli(server, "ci-failures", f"{REPO}#9", "--json").stdout)
    (job,) = data["jobs"]
    assert (job["error"], job["log"]) == (problem, None)
    assert [(a["path"], a["line"], a["title"]) for a in job["annotations"]] == [
        ("src/a.py", 3, None),
        ("src/b.py", 10, "E501"),
    ]
    assert APP_TOKEN not in done.stdout + json.dumps(data)
    assert "\x1b" not in done.stdout + job["summary"]


def test_a_job_with_a_log_reads_no_annotations(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    _annotated_run(repo, 10, (LOGS / "pytest.log").read_bytes())
    done = cli(server, "ci-failures", f"{REPO}#10")
    assert done.returncode == 0
    assert FIRST_FAILURE["pytest.log"] in done.stdout
    assert not [r for r in server.requests("GET") if r.path.endswith("/annotations")]
    data = json.loads(cli(server, "ci-failures", f"{REPO}#10", "--json").stdout)
    assert (data["jobs"][0]["annotations"], data["jobs"][0]["summary"]) == (None, None)


def test_without_a_log_or_annotations_it_says_so(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("bare")
    repo.add_pr(11, head_ref="bare", head_sha=head)
    repo.add_run(head, "build", "failure", run_id=1100, log=b"")
    done = cli(server, "ci-failures", f"{REPO}#11")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1:] == ["  log empty", "  no annotations or summary"]


def test_a_workflow_that_never_started_a_job_is_shown(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("broken-workflow")
    repo.add_pr(12, head_ref="broken", head_sha=head)
    repo.add_run(head, "test", "failure", run_id=1200, log=(LOGS / "pytest.log").read_bytes())
    url = f"http://github.localhost/{REPO}/actions/runs"
    repo.workflow_runs += [
        # The run the failing `test` job belongs to (details_url .../runs/1/job/1200): not repeated.
        {"id": 1, "name": "CI", "head_sha": head, "conclusion": "failure", "html_url": f"{url}/1"},
        {
            "id": 2,
            "name": "Release",
            "path": ".github/workflows/release.yml",
            "head_sha": head,
            "status": "completed",
            "conclusion": "startup_failure",
            "html_url": f"{url}/2",
        },
        {
            "id": 3,
            "name": "Docs",
            "head_sha": head,
            "conclusion": "success",
            "html_url": f"{url}/3",
        },
        {"id": 4, "name": "Old", "head_sha": "0" * 40, "conclusion": "startup_failure"},
    ]
    done = cli(server, "ci-failures", f"{REPO}#12")
    assert (done.returncode, done.stderr) == (0, "")
    assert list(_blocks(done.stdout)) == ["test", "Release"]
    assert _blocks(done.stdout)["Release"] == [
        f"FAILED Release {url}/2",
        "  no jobs ran (startup_failure): check .github/workflows/release.yml",
    ]
    data = json.loads(cli(server, "ci-failures", f"{REPO}#12", "--json").stdout)
    assert data["runsWithoutJobs"] == [
        {
            "id": 2,
            "name": "Release",
            "path": ".github/workflows/release.yml",
            "url": f"{url}/2",
            "conclusion": "startup_failure",
        }
    ]


def test_only_a_workflow_without_jobs_is_not_none_found(server: ForgeServer) -> None:
    repo = server.state.repo(REPO)
    head = repo.add_commit("no-jobs")
    repo.add_pr(13, head_ref="nojobs", head_sha=head)
    repo.workflow_runs.append(
        {"id": 9, "name": "CI", "head_sha": head, "conclusion": "startup_failure"}
    )
    done = cli(server, "ci-failures", f"{REPO}#13")
    assert (done.returncode, done.stdout) == (0, "FAILED CI -\n  no jobs ran (startup_failure)\n")
