"""forge-cli ci-failures: why built-in CI failed at a PR's head, at most 5 jobs' key log lines."""

from __future__ import annotations

from ._common import (
    CliExit,
    UsageError,
    out,
    parallel,
    port,
    pr_ref,
    print_json,
    read_pr,
    repo_name,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._types import CheckRun

__all__ = ["MAX_FAILED_JOBS", "ci_failures_command"]

MAX_FAILED_JOBS = 5
_FAILING = frozenset({"failure", "timed_out", "startup_failure"})
# Statuses the caller reads itself; rate limits and 5xx are retried by gh_call first.
_ANSWERS = frozenset(range(200, 500)) - {403, 429}


def _gh_get(path: str, *, accept: str = "application/vnd.github+json") -> tuple[int, bytes]:
    from .._errors import ForgeCliError
    from .._gh import gh_call, run_gh
    from .._ghenv import rest_args

    status: int | None = None
    try:
        response = gh_call(
            run_gh, rest_args("GET", path, accept=accept), read=True, timeout=120.0, ok=_ANSWERS
        )
    except ForgeCliError as exc:
        if exc.kind != "forbidden" or exc.status is None:
            raise
        status = exc.status
    if status is not None:
        return status, b""
    return response.status, response.body


def _job_log(repo: str, job_id: int) -> tuple[str | None, str | None]:
    from urllib.parse import quote

    status, body = _gh_get(
        f"repos/{quote(repo, safe='/')}/actions/jobs/{job_id}/logs", accept="*/*"
    )
    if status != 200:
        return None, f"log unavailable (HTTP {status})"
    return body.decode("utf-8", "replace"), None


def _job_report(repo: str, run: CheckRun, lines: int) -> tuple[list[str], dict[str, object]]:
    from .._logs import summarize_job_log

    url = run.details_url or "-"
    text, problem = _job_log(repo, run.id)
    human = [f"FAILED {run.name} {url}"]
    record: dict[str, object] = {
        "id": run.id,
        "name": run.name,
        "url": run.details_url,
        "conclusion": run.conclusion,
    }
    if text is None:
        human.append(f"  {problem}")
        record.update(error=problem, log=None, lines=[])
        return human, record
    summary = summarize_job_log(text, lines=lines)
    shown = list(summary.display_lines())
    human.extend(f"  {line}" for line in shown)
    record.update(error=None, log=summary.to_json(), lines=shown)
    return human, record


def _one_job(repo: str, job: int) -> CheckRun:
    from .._gh import GhResponse
    from .._wire import _mapped, _run_from_json

    status, body = _gh_get(f"repos/{repo}/check-runs/{job}")
    if status == 404:
        raise CliExit(1, f"no check run {job} in {repo}")
    if status != 200:
        raise CliExit(1, f"cannot read check run {job}: HTTP {status}")
    return _mapped("a check run", GhResponse(status=status, headers={}, body=body), _run_from_json)


def ci_failures_command(
    target: str, job: int | None = None, lines: int = 20, as_json: bool = False
) -> None:
    """Show why built-in CI failed at a PR's head: at most 5 failing jobs, each log's key lines."""
    from .._constants import ACTIONS_APP_ID

    if not 1 <= lines <= 10_000:
        raise UsageError("--lines must be between 1 and 10000")
    number: int | None
    if job is not None:
        if "#" in target:
            raise UsageError("give either <repo>#<n> or <repo> --job <id>, not both")
        repo, number = repo_name(target), None
        if job < 1:
            raise UsageError("--job must be a positive check run id")
        failing = [_one_job(repo, job)]
        head_sha = failing[0].head_sha
    else:
        repo, number = pr_ref(target)
        forge = port()
        pr = read_pr(forge, repo, number, "ci-failures")
        head_sha = pr.head_sha
        runs = forge.latest_check_runs(repo, head_sha)
        failing = sorted(
            (r for r in runs if r.app_id == ACTIONS_APP_ID and r.conclusion in _FAILING),
            key=lambda r: r.id,
        )
    shown, skipped = failing[:MAX_FAILED_JOBS], failing[MAX_FAILED_JOBS:]
    reports = parallel(*(lambda run=run: _job_report(repo, run, lines) for run in shown))
    if as_json:
        print_json(
            {
                "repo": repo,
                "number": number,
                "headSha": head_sha,
                "jobs": [record for _, record in reports],
                "skipped": [{"id": r.id, "name": r.name, "url": r.details_url} for r in skipped],
            }
        )
        return
    if not reports:
        where = f"{repo}#{number}" if number is not None else repo
        out(f"no failing built-in CI jobs at {where} head {head_sha}")
        return
    for human, _ in reports:
        for line in human:
            out(line)
    if skipped:
        names = ", ".join(r.name for r in skipped)
        out(f"SKIPPED {len(skipped)} more failing jobs: {names}")
