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
    from .._github.rest import RestRequest
    from .._types import CheckRun

__all__ = ["MAX_FAILED_JOBS", "ci_failures_command", "first_failure_line"]

MAX_FAILED_JOBS = 5
_FAILING = frozenset({"failure", "timed_out", "startup_failure"})
# Statuses the caller reads itself; rate limits and 5xx are retried by gh_call first.
_ANSWERS = frozenset(range(200, 500)) - {403, 429}


def _gh_get(request: RestRequest) -> tuple[int, bytes]:
    """Make `request` (built with `ok=_ANSWERS`) and return its status and body; a 403 that is
    no rate limit is its status with no body."""
    from .._errors import ForgeCliError
    from .._gh import run_gh, send

    status: int | None = None
    try:
        response = send(run_gh, request, timeout=120.0)
    except ForgeCliError as exc:
        if exc.kind != "forbidden" or exc.status is None:
            raise
        status = exc.status
    if status is not None:
        return status, b""
    return response.status, response.body


def _job_log(repo: str, job_id: int) -> tuple[str | None, str | None]:
    from .._github.rest import job_logs

    status, body = _gh_get(job_logs(repo, job_id, ok=_ANSWERS))
    if status != 200:
        return None, f"log unavailable (HTTP {status})"
    return body.decode("utf-8", "replace"), None


# Without a log (gone, empty, or a job that never started) the check run's annotations and its
# output summary say what failed; at most this many annotations and lines per message are shown.
MAX_ANNOTATIONS = 50
_MESSAGE_LINES = 5
_CONTROL = str.maketrans(dict.fromkeys([*range(9), *range(11, 32), *range(127, 160)]))


def first_failure_line(repo: str, sha: str, check: str) -> str | None:
    """Return the first failure line of the failed run of `check` at `sha`, read from its job log
    as `ci-failures` reads it; None when there is no such run, log or line."""
    from .._errors import ForgeError
    from .._logs import summarize_job_log

    try:
        runs = port().latest_check_runs(repo, sha)
        failed = [r for r in runs if r.name == check and r.conclusion in _FAILING]
        if not failed:
            return None
        text, _problem = _job_log(repo, failed[0].id)
    except ForgeError:
        return None
    if not text:
        return None
    first = summarize_job_log(text).first_failure
    return _clean(first)[:300] if first else None


def _clean(text: str) -> str:
    """Return forge-written text safe to print: secrets cut, control characters (ESC) dropped."""
    from .._redact import redact_forge_secrets

    return redact_forge_secrets(text).translate(_CONTROL)


def _json_answer(status: int, body: bytes) -> object:
    import json

    if status != 200:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _annotation(value: object) -> dict[str, object] | None:
    if not isinstance(value, dict):
        return None
    path, line, message = value.get("path"), value.get("start_line"), value.get("message")
    if not isinstance(path, str) or not isinstance(line, int) or isinstance(line, bool):
        return None
    level, title = value.get("annotation_level"), value.get("title")
    return {
        "path": _clean(path),
        "line": line,
        "level": _clean(level) if isinstance(level, str) else None,
        "title": _clean(title) if isinstance(title, str) else None,
        "message": _clean(message) if isinstance(message, str) else "",
    }


def _without_log(repo: str, run: CheckRun, lines: int) -> tuple[list[str], dict[str, object]]:
    """Return the human lines and JSON fields of a failed job's annotations and output summary."""
    from .._github.rest import check_run, check_run_annotations

    (a_status, a_body), (r_status, r_body) = parallel(
        lambda: _gh_get(check_run_annotations(repo, run.id, MAX_ANNOTATIONS, ok=_ANSWERS)),
        lambda: _gh_get(check_run(repo, run.id, ok=_ANSWERS)),
    )
    human: list[str] = []
    rows = _json_answer(a_status, a_body)
    annotations: list[dict[str, object]] | None = None
    if isinstance(rows, list):
        annotations = [a for a in (_annotation(r) for r in rows) if a is not None]
        for a in annotations:
            message = str(a["message"]).splitlines() or [""]
            head = f"{a['title']}: {message[0]}" if a["title"] else message[0]
            human.append(f"  {a['path']}:{a['line']}: {head}".rstrip())
            human.extend(f"    {more}" for more in message[1:_MESSAGE_LINES])
    else:
        human.append(f"  annotations unavailable (HTTP {a_status})")
    checked = _json_answer(r_status, r_body)
    output = checked.get("output") if isinstance(checked, dict) else None
    summary: str | None = None
    if isinstance(output, dict):
        title, text = output.get("title"), output.get("summary")
        parts = [p for p in (title, text) if isinstance(p, str) and p.strip()]
        summary = _clean("\n".join(parts)) if parts else None
        count = output.get("annotations_count")
        if annotations is not None and isinstance(count, int) and count > len(annotations):
            human.append(f"  ({count - len(annotations)} more annotations)")
    if summary:
        human.append("  summary:")
        human.extend(f"    {line}".rstrip() for line in summary.splitlines()[:lines])
    if not annotations and not summary:
        human.append("  no annotations or summary")
    return human, {"annotations": annotations, "summary": summary}


def _job_report(repo: str, run: CheckRun, lines: int) -> tuple[list[str], dict[str, object]]:
    from .._logs import summarize_job_log

    url = run.details_url or "-"
    human = [f"FAILED {run.name} {url}"]
    record: dict[str, object] = {
        "id": run.id,
        "name": run.name,
        "url": run.details_url,
        "conclusion": run.conclusion,
    }
    text, problem = _job_log(repo, run.id)
    if text is not None and not text.strip():
        text, problem = None, "log empty"
    if text is None:
        human.append(f"  {problem}")
        more, fields = _without_log(repo, run, lines)
        human.extend(more)
        record.update(error=problem, log=None, lines=[], **fields)
        return human, record
    summary = summarize_job_log(text, lines=lines)
    shown = list(summary.display_lines())
    human.extend(f"  {line}" for line in shown)
    record.update(error=None, log=summary.to_json(), lines=shown, annotations=None, summary=None)
    return human, record


def _workflow_runs(repo: str, head_sha: str) -> object:
    """Return the Actions workflow runs listing at `head_sha` (one page), None when unreadable."""
    from .._github.rest import workflow_runs

    return _json_answer(*_gh_get(workflow_runs(repo, head_sha, ok=_ANSWERS)))


def _runs_without_jobs(listing: object, runs: tuple[CheckRun, ...]) -> list[dict[str, object]]:
    """Return the failed workflow runs of `listing` that have no job (check run) in `runs`.

    A workflow that fails before any job starts (`startup_failure`: a broken workflow file, a
    missing reusable workflow) leaves no check run and no log; only the workflow run says so.
    """
    rows = listing.get("workflow_runs") if isinstance(listing, dict) else None
    if not isinstance(rows, list):
        return []
    with_jobs = {
        part for run in runs for part in (run.details_url or "").split("/actions/runs/")[1:]
    }
    found: list[dict[str, object]] = []
    for row in rows:
        if not isinstance(row, dict) or row.get("conclusion") not in _FAILING:
            continue
        run_id = row.get("id")
        if not isinstance(run_id, int) or any(p.startswith(f"{run_id}/") for p in with_jobs):
            continue
        name, where, url = row.get("name"), row.get("path"), row.get("html_url")
        found.append(
            {
                "id": run_id,
                "name": _clean(name) if isinstance(name, str) else f"run {run_id}",
                "path": _clean(where) if isinstance(where, str) else None,
                "url": _clean(url) if isinstance(url, str) else None,
                "conclusion": str(row["conclusion"]),
            }
        )
    return found


def _one_job(repo: str, job: int) -> CheckRun:
    from .._gh import GhResponse
    from .._github.checks import check_run_from_rest
    from .._github.failures import parsed
    from .._github.rest import check_run

    status, body = _gh_get(check_run(repo, job, ok=_ANSWERS))
    if status == 404:
        raise CliExit(1, f"no check run {job} in {repo}")
    if status != 200:
        raise CliExit(1, f"cannot read check run {job}: HTTP {status}")
    data = GhResponse(status=status, headers={}, body=body).json()
    return parsed("a check run", data, check_run_from_rest, status=status)


def ci_failures_command(
    target: str, job: int | None = None, lines: int = 20, as_json: bool = False
) -> None:
    """Show why built-in CI failed at a PR's head: at most 5 failing jobs, each log's key lines."""
    from .._constants import ACTIONS_APP_ID

    if not 1 <= lines <= 10_000:
        raise UsageError("--lines must be between 1 and 10000")
    number: int | None
    without_jobs: list[dict[str, object]] = []
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
        runs, listing = parallel(
            lambda: forge.latest_check_runs(repo, head_sha),
            lambda: _workflow_runs(repo, head_sha),
        )
        without_jobs = _runs_without_jobs(listing, runs)
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
                "runsWithoutJobs": without_jobs,
            }
        )
        return
    if not reports and not without_jobs:
        where = f"{repo}#{number}" if number is not None else repo
        out(f"no failing built-in CI jobs at {where} head {head_sha}")
        return
    for human, _ in reports:
        for line in human:
            out(line)
    for run in without_jobs:
        out(f"FAILED {run['name']} {run['url'] or '-'}")
        where = f": check {run['path']}" if run["path"] else ""
        out(f"  no jobs ran ({run['conclusion']}){where}")
    if skipped:
        names = ", ".join(r.name for r in skipped)
        out(f"SKIPPED {len(skipped)} more failing jobs: {names}")
