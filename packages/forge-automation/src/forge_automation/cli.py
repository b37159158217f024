"""forge-cli: ci-wait, pr-status, pr-context, ci-failures and premerge over the logged-in `gh`.

Commands are thin: each parses its arguments, calls the library and prints one line per fact.
One boundary (`main`) maps every error to the spec's exit codes: usage errors exit 64 for ci-wait,
pr-status and pr-context and 2 for ci-failures and premerge, never with a traceback. `--debug`
first (or FORGE_CLI_DEBUG=1) adds a redacted traceback for errors that are not the user's.
"""

# No `from __future__ import annotations`: typer reads the wrappers' Annotated parameters in
# `build_app`, where `typer` is a local name, so they must be evaluated where they are written.
# Module-level annotations that name typing's members are quoted instead: `pr-status` starts its
# first gh reads before importing anything it can defer (json, typing, dataclasses, the library),
# so that Python's start-up runs beside them.
import os
import re
import sys
from collections.abc import Callable, Sequence

from ._ghenv import gh_child_env, rest_args

# Not `typing.TYPE_CHECKING`: importing typing costs the fast path time it does not need; type
# checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, NoReturn

    import typer

    from ._exec import ExecOptions, ExecResult, GhExec
    from ._port import ForgePort
    from ._types import CheckRun, PullRequest

__all__ = ["build_app", "fast_parse", "main"]

EX_USAGE = 64
EX_BAD_ARGS = 2
EX_UNAVAILABLE = 69
EX_SOFTWARE = 70
# The exit code of a usage error per command; an unknown command is a bad verb: 64.
USAGE_EXIT = {
    "ci-wait": EX_USAGE,
    "pr-status": EX_USAGE,
    "pr-context": EX_USAGE,
    "ci-failures": EX_BAD_ARGS,
    "premerge": EX_BAD_ARGS,
}
MAX_FAILED_JOBS = 5
_FAILING = frozenset({"failure", "timed_out", "startup_failure"})
# The wire's default timeout (`gh_cli_wire`).
_GH_TIMEOUT = 60.0
_PR_REF = re.compile(r"\A([^#\s]+)#([0-9]{1,10})\Z")


class CliExit(Exception):
    """End the command with `code`, after printing `message` (if any) on stderr."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


class UsageProblem(Exception):
    """A user error in the arguments: exits with the command's usage code."""

    def __init__(self, message: str, *, prefixed: bool = True) -> None:
        super().__init__(message)
        self.prefixed = prefixed


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _port(exec: "GhExec | None" = None) -> "ForgePort":
    from ._port import forge_port
    from ._wire import gh_cli_wire

    return forge_port(gh_cli_wire(exec))


def _pr_ref(value: str) -> tuple[str, int]:
    from ._errors import ForgeInputError
    from ._validate import validate_repo

    match = _PR_REF.fullmatch(value)
    if match is None or int(match.group(2)) < 1:
        raise UsageProblem(f"expected <owner>/<name>#<number>, got {value[:200]!r}")
    try:
        validate_repo(match.group(1))
    except ForgeInputError as exc:
        raise UsageProblem(str(exc)) from None
    return match.group(1), int(match.group(2))


def _repo(value: str) -> str:
    from ._errors import ForgeInputError
    from ._validate import validate_repo

    try:
        return validate_repo(value)
    except ForgeInputError as exc:
        raise UsageProblem(str(exc)) from None


def _json(value: object) -> None:
    import json

    _out(json.dumps(value, ensure_ascii=False))


def _short(sha: str | None) -> str:
    return sha[:7] if sha else "-"


# -- ci-wait --------------------------------------------------------------------------------------


def ci_wait_command(repo: str, sha: str, timeout: float = 1800.0, interval: float = 15.0) -> None:
    """Wait for CI on a sha: GREEN (0), RED (1) or TIMEOUT (2); no verdict exits 69."""
    from ._ci_wait import ci_wait
    from ._errors import ForgeCliError, ForgeInputError

    _repo(repo)
    try:
        result = ci_wait(_port(), repo, sha, timeout=timeout, interval=interval)
    except ForgeInputError as exc:
        raise UsageProblem(str(exc)) from None
    except ForgeCliError as exc:
        if exc.status in (404, 422):
            raise CliExit(EX_USAGE, f"unknown sha {sha} in {repo}") from None
        # Never RED's code without a RED line: a read that failed for good is no verdict.
        raise CliExit(
            EX_UNAVAILABLE, f"ci-wait: no verdict for {sha}: {_redact(str(exc))}"
        ) from None
    reasons = ", ".join(result.reasons) or "-"
    word = {"green": "GREEN", "red": "RED", "timeout": "TIMEOUT"}[result.verdict]
    _out(f"{word} {repo} {sha} {reasons}")
    raise CliExit({"green": 0, "red": 1, "timeout": 2}[result.verdict])


# -- pr-status ------------------------------------------------------------------------------------


def _parallel(*calls: "Callable[[], Any]") -> "list[Any]":
    """Run each call in its own thread; return their results in order, or raise the first error."""
    import threading

    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # re-raised in the caller's thread below
            errors[index] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


def _check_counts(runs: "Sequence[CheckRun]", head: str) -> tuple[int, int, list[str]]:
    from ._verdict import run_outcome

    latest: dict[tuple[str, int | None], CheckRun] = {}
    for run in sorted((r for r in runs if r.head_sha == head), key=lambda r: r.id):
        latest[(run.name, run.app_id)] = run
    outcomes = [(run.name, run_outcome(run, required=False)) for run in latest.values()]
    failing = [name for name, outcome in outcomes if outcome == "fail"]
    passed = sum(1 for _, outcome in outcomes if outcome == "pass")
    return passed, len(outcomes), failing


def pr_status_command(ref: str, as_json: bool = False) -> None:
    """Print a PR's state, head, mergeability, checks and merge blockers on one line."""
    import threading

    repo, number = _pr_ref(ref)
    early = _EarlyGh()
    loader = threading.Thread(target=_load_pr_status_modules, daemon=True)
    # While the loader imports, this thread only waits on children and starts more; a short
    # switch interval hands it the GIL within a millisecond each time, not after 5.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        # The PR and the runs at its pull ref need nothing the PR says, so both start before the
        # library is imported, which then loads beside them; the base's rules and the behind
        # count start the moment the PR answers. The wire still makes every call and decides on
        # every answer: a call started early is only answered sooner (see `_EarlyGh`).
        pr_args = _get_args(f"repos/{repo}/pulls/{number}")
        early.start(pr_args)
        early.start(_get_args(_runs_path(repo, _pull_head(number))))
        start_base_reads = _base_reads(early, repo)
        loader.start()
        start_base_reads(early.peek(pr_args))
        loader.join()
        _pr_status(_port(early), repo, number, as_json=as_json)
    finally:
        early.close()
        if loader.is_alive():
            loader.join()  # never leave an import half done behind an error
        sys.setswitchinterval(switch_interval)


def _load_pr_status_modules() -> None:
    # Only fills sys.modules ahead of `_pr_status`; a module that fails to import here fails
    # again there, in the caller's thread, where the error boundary sees it.
    import contextlib

    with contextlib.suppress(Exception):
        from . import _port, _readiness, _verdict, _wire  # noqa: F401


def _pr_status(port: "ForgePort", repo: str, number: int, *, as_json: bool) -> None:
    from dataclasses import replace

    from ._constants import ACTIONS_APP_ID
    from ._errors import ForgeCliError
    from ._port import load_required_contexts
    from ._readiness import merge_readiness

    pr = _read_pr(port, repo, number)
    early_runs = _runs_at_pull_head(port, repo, number, pr.head_sha)
    # The base's rules, the head's runs and the behind count do not depend on each other.
    # (threads, not concurrent.futures: its import alone costs a gh call's tenth)
    is_open = pr.state == "open" and not pr.merged
    rules, runs, ancestry = _parallel(
        lambda: load_required_contexts(port, repo, pr.base_ref),
        lambda: early_runs if early_runs is not None else port.check_runs(repo, pr.head_sha),
        lambda: port.wire.compare_ancestry(repo, pr.base_ref, pr.head_sha) if is_open else None,
    )
    if is_open:
        if ancestry is None:
            raise ForgeCliError(f"cannot tell whether #{number} is behind its base", status=404)
        pr = replace(pr, behind=ancestry.behind_by > 0, behind_by=ancestry.behind_by)
    apps = {ACTIONS_APP_ID} | {c.app_id for c in rules.contexts if c.app_id is not None}
    # Approval lives elsewhere: judging against the PR's own head drops the unapproved blocker.
    readiness = merge_readiness(
        pr=pr, rules=rules, runs=runs, required_apps=apps, approved_head=pr.head_sha
    )
    passed, total, failing = _check_counts(runs, pr.head_sha)
    state = "merged" if pr.merged else pr.state
    if as_json:
        _json(
            {
                "repo": repo,
                "number": number,
                "state": state,
                "headSha": pr.head_sha,
                "baseRef": pr.base_ref,
                "mergeableState": pr.mergeable_state,
                "checks": {"passed": passed, "total": total, "failing": failing},
                "ready": readiness.ready,
                "blockers": [b.to_json() for b in readiness.blockers],
            }
        )
        return
    blockers = "; ".join(f"{b.reason}: {b.detail}" for b in readiness.blockers) or "none"
    _out(
        f"{repo}#{number} {state}{' draft' if pr.draft else ''} head={_short(pr.head_sha)} "
        f"mergeable={pr.mergeable_state} checks={passed}/{total} "
        f"failing={','.join(failing) or '-'} "
        f"{'ready' if readiness.ready else 'blocked'} blockers={blockers}"
    )


def _runs_at_pull_head(
    port: "ForgePort", repo: str, number: int, head_sha: str
) -> "tuple[CheckRun, ...] | None":
    """Return the runs read through `refs/pull/<n>/head` if they are provably `head_sha`'s.

    That read started before the PR was known, so it may describe another commit: the pull ref
    lags a push, or a push landed between the two reads. Only one complete page whose every run
    names `head_sha` is that commit's whole list; an empty page names no commit at all, and a
    later page could come from another commit than the first. None sends the caller to a read
    by sha, so a stale list can never pass for the current head's.
    """
    from ._errors import ForgeCliError, ForgeInputError
    from ._validate import validate_sha

    try:
        validate_sha(head_sha)
        page = port.wire.list_check_runs(repo, _pull_head(number), 1, latest=False)
    except (ForgeCliError, ForgeInputError):
        return None
    if page.next_page is not None or not page.items:
        return None
    if any(run.head_sha != head_sha for run in page.items):
        return None
    return page.items


# -- pr-status: gh calls started before the wire asks for them --------------------------------
#
# Each path below is the one the wire builds for the same call (`_GhCliWire._rest` and the
# method named); tests pin that they agree. One that did not would only be started in vain.


def _get_args(path: str) -> list[str]:
    return rest_args("GET", path)


def _pull_head(number: int) -> str:
    return f"refs/pull/{number}/head"


def _runs_path(repo: str, ref: str) -> str:
    # list_check_runs(repo, ref, 1, latest=False); a validated repo and a pull ref hold no
    # character the wire's quoting would change.
    return f"repos/{repo}/commits/{ref}/check-runs?filter=all&per_page=100&page=1"


def _base_reads(early: "_EarlyGh", repo: str) -> "Callable[[bytes | None], None]":
    """Return what starts the base's ruleset read and the behind count from the PR's answer.

    Its imports happen here, before the library loads beside the first reads, so that it runs
    the moment the PR answers. Only values that pass the checks the port makes reach a path;
    anything unexpected starts nothing, and the wire then makes those calls itself as usual.
    """
    import json
    from urllib.parse import quote

    from ._errors import ForgeInputError
    from ._validate import validate_branch, validate_sha

    def start(pr_answer: bytes | None) -> None:
        if pr_answer is None:
            return
        status_line, _, rest = pr_answer.partition(b"\n")
        if status_line.split(b" ")[1:2] != [b"200"]:
            return
        _, sep, body = rest.partition(b"\r\n\r\n")
        if not sep:
            _, _, body = rest.partition(b"\n\n")
        try:
            data = json.loads(body)
            base, head = data["base"]["ref"], data["head"]["sha"]
            validate_branch(base)
            validate_sha(head)
        except (ValueError, LookupError, TypeError, ForgeInputError):
            return
        branch = quote(base, safe="/")
        # load_required_contexts -> required_checks -> get_branch_rules(repo, base, 1)
        early.start(_get_args(f"repos/{repo}/rules/branches/{branch}?per_page=100&page=1"))
        merged = data.get("merged", data.get("merged_at") is not None)
        if data.get("state", "open") == "open" and not merged:
            # compare_ancestry(repo, base, head)
            early.start(_get_args(f"repos/{repo}/compare/{branch}...{head}?per_page=1"))

    return start


class _EarlyGh:
    """A GhExec that answers a call from a gh child started before the call was made.

    `start(args)` runs gh now, in the environment `run_gh` gives a call without extra env; when
    the wire later makes the same call (same argv, no input, that same environment) it gets that
    child's answer. Any other call, or one whose child could not start, runs gh as usual, so a
    mismatch costs time, never correctness. `close()` stops the children nobody asked for.
    """

    def __init__(self) -> None:
        self._started: dict[tuple[str, ...], _EarlyChild] = {}

    def start(self, args: Sequence[str]) -> None:
        """Start `gh <args>` unless it is already running."""
        import subprocess

        if tuple(args) in self._started:
            return
        env = gh_child_env()
        try:
            child = subprocess.Popen(
                ["gh", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError:
            return  # the call itself runs gh again and reports why it cannot
        self._started[tuple(args)] = _EarlyChild(child, env)

    def peek(self, args: Sequence[str]) -> bytes | None:
        """Wait for the child started for `args` and return its stdout; the call still gets it."""
        started = self._started.get(tuple(args))
        if started is None:
            return None
        return started.finish(_GH_TIMEOUT)[1]

    def __call__(self, args: Sequence[str], options: "ExecOptions") -> "ExecResult":
        from ._exec import ExecResult
        from ._wire import run_gh

        started = self._started.pop(tuple(args), None)
        if started is None:
            return run_gh(args, options)
        if options.input or options.cwd is not None or started.env != gh_child_env(options.env):
            started.stop()
            return run_gh(args, options)
        returncode, stdout, stderr = started.finish(options.timeout)
        return ExecResult(returncode=returncode, stdout=stdout, stderr=stderr)

    def close(self) -> None:
        """Stop every child whose answer nobody asked for."""
        while self._started:
            self._started.popitem()[1].stop()


class _EarlyChild:
    """One gh child started early, and what it answered once it has."""

    __slots__ = ("answer", "child", "env")

    def __init__(self, child: "subprocess.Popen[bytes]", env: dict[str, str]) -> None:
        self.child = child
        self.env = env
        self.answer: tuple[int, bytes, bytes] | None = None

    def finish(self, timeout: float | None) -> tuple[int, bytes, bytes]:
        """Wait for the child (at most `timeout` seconds, like run_gh) and keep its answer."""
        import subprocess

        from ._errors import ForgeCliError

        if self.answer is None:
            timed_out = False
            try:
                stdout, stderr = self.child.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            if timed_out:
                # As in run_gh, raised outside the handler: TimeoutExpired carries argv and
                # partial output, and would otherwise ride along as __context__.
                self.stop()
                raise ForgeCliError(f"gh timed out after {timeout} s")
            self.answer = (self.child.returncode, stdout, stderr)
        return self.answer

    def stop(self) -> None:
        """Kill the child unless it has answered, and reap it."""
        if self.answer is None:
            self.child.kill()
            self.child.communicate()
            self.answer = (self.child.returncode, b"", b"")


def _read_pr(port: "ForgePort", repo: str, number: int) -> "PullRequest":
    from ._errors import ForgeCliError

    try:
        return port.wire.get_pr(repo, number)
    except ForgeCliError as exc:
        if exc.status == 404:
            raise UsageProblem(f"no PR {repo}#{number} (or no access to it)") from None
        raise


# -- pr-context -----------------------------------------------------------------------------------


def pr_context_command(ref: str) -> None:
    """Print a PR's title, base, head sha and changed files, then its body."""
    from ._constants import PR_FILES_CAP
    from ._errors import FileListTruncatedError

    repo, number = _pr_ref(ref)
    port = _port()
    pr = _read_pr(port, repo, number)
    _out(f"title: {pr.title}")
    _out(f"base: {pr.base_ref}")
    _out(f"head: {pr.head_sha}")
    count = pr.changed_files
    if count is not None and count > PR_FILES_CAP:
        _out(f"files: {count} (more than the forge lists; {PR_FILES_CAP:,} at most, none shown)")
    else:
        try:
            files = port.list_pr_files(repo, number)
        except FileListTruncatedError as exc:
            _out(f"files: {exc.expected} (listing came back with {exc.received}; none shown)")
        else:
            _out(f"files: {len(files)}")
            for entry in files:
                moved = f"{entry.previous_path} -> " if entry.previous_path else ""
                _out(f"  {entry.status} {moved}{entry.path}")
    _out("")
    _out(pr.body)


# -- ci-failures ----------------------------------------------------------------------------------


def _gh_get(path: str, *, accept: str = "application/vnd.github+json") -> tuple[int, bytes]:
    from ._errors import ForgeCliError
    from ._gh import gh_call, run_gh

    # Rate limits and 5xx are retried by gh_call; any other status is the caller's to read.
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


_ANSWERS = frozenset(range(200, 500)) - {403, 429}


def _job_log(repo: str, job_id: int) -> tuple[str | None, str | None]:
    from urllib.parse import quote

    status, body = _gh_get(
        f"repos/{quote(repo, safe='/')}/actions/jobs/{job_id}/logs", accept="*/*"
    )
    if status != 200:
        return None, f"log unavailable (HTTP {status})"
    return body.decode("utf-8", "replace"), None


def _job_report(repo: str, run: "CheckRun", lines: int) -> tuple[list[str], dict[str, object]]:
    from ._logs import summarize_job_log

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


def ci_failures_command(
    target: str, job: int | None = None, lines: int = 20, as_json: bool = False
) -> None:
    """Show why built-in CI failed at a PR's head: at most 5 failing jobs, each log's key lines."""
    from ._constants import ACTIONS_APP_ID
    from ._wire import _run_from_json

    if not 1 <= lines <= 10_000:
        raise UsageProblem("--lines must be between 1 and 10000")
    number: int | None
    if job is not None:
        if "#" in target:
            raise UsageProblem("give either <repo>#<n> or <repo> --job <id>, not both")
        repo, number = _repo(target), None
        if job < 1:
            raise UsageProblem("--job must be a positive check run id")
        status, body = _gh_get(f"repos/{repo}/check-runs/{job}")
        if status == 404:
            raise CliExit(1, f"no check run {job} in {repo}")
        if status != 200:
            raise CliExit(1, f"cannot read check run {job}: HTTP {status}")
        from ._gh import GhResponse
        from ._wire import _mapped

        answer = GhResponse(status=status, headers={}, body=body)
        failing = [_mapped("a check run", answer, _run_from_json)]
        head_sha = failing[0].head_sha
    else:
        repo, number = _pr_ref(target)
        port = _port()
        pr = _read_pr(port, repo, number)
        head_sha = pr.head_sha
        runs = port.latest_check_runs(repo, head_sha)
        failing = sorted(
            (r for r in runs if r.app_id == ACTIONS_APP_ID and r.conclusion in _FAILING),
            key=lambda r: r.id,
        )
    shown, skipped = failing[:MAX_FAILED_JOBS], failing[MAX_FAILED_JOBS:]
    reports = _parallel(*(lambda run=run: _job_report(repo, run, lines) for run in shown))
    if as_json:
        _json(
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
        _out(f"no failing built-in CI jobs at {where} head {head_sha}")
        return
    for human, _ in reports:
        for line in human:
            _out(line)
    if skipped:
        names = ", ".join(r.name for r in skipped)
        _out(f"SKIPPED {len(skipped)} more failing jobs: {names}")


# -- premerge -------------------------------------------------------------------------------------


def premerge_command(
    ref: str,
    head_sha: str,
    approved_head: str,
    clone: str | None = None,
    as_json: bool = False,
) -> None:
    """Check a PR may merge at HEAD_SHA: OK (0) or FAIL with every reason (1)."""
    from ._errors import ForgeInputError
    from ._premerge import premerge, validate_full_sha

    repo, number = _pr_ref(ref)
    try:
        validate_full_sha(head_sha, "head_sha")
        validate_full_sha(approved_head, "approved_head")
    except ForgeInputError as exc:
        raise UsageProblem(str(exc)) from None
    if clone is not None and not os.path.isdir(clone):
        raise UsageProblem(f"--clone {clone!r} is not a directory")
    result = premerge(_port(), repo, number, head_sha, approved_head=approved_head, clone=clone)
    if as_json:
        _json(result.to_json())
    elif result.ok:
        required = ",".join(result.required) or "-"
        _out(
            f"OK {repo}#{number} head={result.head} base={result.base} required={required} "
            f"strict={'true' if result.strict else 'false'} behind={result.behind_by}"
        )
    else:
        _out(f"FAIL {repo}#{number}: {'; '.join(result.reasons)}")
    raise CliExit(0 if result.ok else 1)


# -- argument parsing: a fast path, and typer for everything else ------------------------------


def build_app() -> "typer.Typer":
    """Return the typer app; built on demand because typer (with pydantic) costs half a second."""
    from typing import Annotated

    import typer

    app = typer.Typer(
        name="forge-cli",
        help="Read a forge's PRs and CI through the logged-in gh (GH_HOST, GH_TOKEN as usual).",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    pr_ref = Annotated[str, typer.Argument(metavar="REPO#N", help="owner/name#number")]
    json_flag = Annotated[bool, typer.Option("--json", help="print one JSON object")]

    @app.command("ci-wait")
    def ci_wait(
        repo: Annotated[str, typer.Argument(help="owner/name")],
        sha: Annotated[str, typer.Argument(help="the pushed commit, 40 hex characters")],
        timeout: Annotated[float, typer.Option(help="seconds to wait before TIMEOUT")] = 1800.0,
        interval: Annotated[float, typer.Option(help="seconds between polls")] = 15.0,
    ) -> None:
        """Wait for CI on a sha: GREEN (0), RED (1) or TIMEOUT (2)."""
        ci_wait_command(repo, sha, timeout, interval)

    @app.command("pr-status")
    def pr_status(ref: pr_ref, as_json: json_flag = False) -> None:
        """Print a PR's state, head, mergeability, checks and merge blockers on one line."""
        pr_status_command(ref, as_json)

    @app.command("pr-context")
    def pr_context(ref: pr_ref) -> None:
        """Print a PR's title, base, head sha and changed files, then its body."""
        pr_context_command(ref)

    @app.command("ci-failures")
    def ci_failures(
        target: Annotated[str, typer.Argument(metavar="REPO#N|REPO", help="owner/name#number")],
        job: Annotated[int | None, typer.Option(help="a check run (job) id, not a PR")] = None,
        lines: Annotated[int, typer.Option(help="tail lines per log")] = 20,
        as_json: json_flag = False,
    ) -> None:
        """Show why built-in CI failed at a PR's head: at most 5 jobs, each log's key lines."""
        ci_failures_command(target, job, lines, as_json)

    @app.command("premerge")
    def premerge(
        ref: pr_ref,
        head_sha: Annotated[str, typer.Argument(metavar="HEAD_SHA", help="the head to merge")],
        approved_head: Annotated[
            str, typer.Option("--approved-head", help="the head a reviewer approved")
        ],
        clone: Annotated[
            str | None, typer.Option(help="a fetched clone holding head, approved head, base tip")
        ] = None,
        as_json: json_flag = False,
    ) -> None:
        """Check a PR may merge at HEAD_SHA: OK (0) or FAIL with every reason (1)."""
        premerge_command(ref, head_sha, approved_head, clone, as_json)

    return app


def __getattr__(name: str) -> object:
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FLOAT = re.compile(r"\A[0-9]{1,9}(?:\.[0-9]{1,9})?\Z")
_INT = re.compile(r"\A[0-9]{1,9}\Z")


class _Shape:
    """A command's plain shape: positionals, valued options (flag -> (name, parse)), flags.

    A plain class, not a dataclass: importing dataclasses here would put its cost (inspect, ast)
    before pr-status starts its first gh reads.
    """

    __slots__ = ("flags", "options", "positionals", "required", "run")

    def __init__(
        self,
        run: Callable[..., None],
        positionals: tuple[str, ...],
        options: dict[str, tuple[str, Callable[[str], object], re.Pattern[str] | None]],
        flags: dict[str, str],
        required: tuple[str, ...] = (),
    ) -> None:
        self.run = run
        self.positionals = positionals
        self.options = options
        self.flags = flags
        self.required = required


_SHAPES = {
    "ci-wait": _Shape(
        ci_wait_command,
        ("repo", "sha"),
        {"--timeout": ("timeout", float, _FLOAT), "--interval": ("interval", float, _FLOAT)},
        {},
    ),
    "pr-status": _Shape(pr_status_command, ("ref",), {}, {"--json": "as_json"}),
    "pr-context": _Shape(pr_context_command, ("ref",), {}, {}),
    "ci-failures": _Shape(
        ci_failures_command,
        ("target",),
        {"--job": ("job", int, _INT), "--lines": ("lines", int, _INT)},
        {"--json": "as_json"},
    ),
    "premerge": _Shape(
        premerge_command,
        ("ref", "head_sha"),
        {"--approved-head": ("approved_head", str, None), "--clone": ("clone", str, None)},
        {"--json": "as_json"},
        required=("approved_head",),
    ),
}


def fast_parse(args: Sequence[str]) -> tuple[Callable[..., None], dict[str, object]] | None:
    """Parse the plain forms typer would accept the same way; None sends `args` to typer.

    Anything unusual (help, `--opt=value`, a repeated or unknown option, a value that starts with
    `-`, a number typer might read differently, a missing argument) goes to typer, so its parsing
    and its error messages stay the one source of truth.
    """
    if not args or args[0] not in _SHAPES:
        return None
    shape = _SHAPES[args[0]]
    values: dict[str, object] = {}
    positionals: list[str] = []
    rest = list(args[1:])
    while rest:
        token = rest.pop(0)
        if token in shape.flags and shape.flags[token] not in values:
            values[shape.flags[token]] = True
        elif token in shape.options and rest and not rest[0].startswith("-"):
            name, parse, pattern = shape.options[token]
            value = rest.pop(0)
            if name in values or (pattern is not None and not pattern.fullmatch(value)):
                return None
            values[name] = parse(value)
        elif token.startswith("-") or len(positionals) == len(shape.positionals):
            return None
        else:
            positionals.append(token)
    if len(positionals) != len(shape.positionals) or any(r not in values for r in shape.required):
        return None
    values.update(zip(shape.positionals, positionals, strict=True))
    return shape.run, values


def _run_typer(args: list[str]) -> None:
    import typer
    from typer._click.exceptions import UsageError

    command = typer.main.get_command(build_app())
    try:
        command.main(args=args, prog_name="forge-cli", standalone_mode=False)
    except UsageError as exc:
        raise UsageProblem(exc.format_message(), prefixed=False) from None
    except typer.Abort:
        raise KeyboardInterrupt from None


# -- the one error boundary -----------------------------------------------------------------------


def _redact(text: str) -> str:
    # Imported here, not with main: the wire module is most of what pr-status starts beside gh.
    from ._redact import redact_forge_secrets

    return redact_forge_secrets(text)


def _fail(code: int, message: str) -> "NoReturn":
    sys.stderr.write(f"forge-cli: {message}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> "NoReturn":
    """Run forge-cli and exit with the spec's code for whatever happened."""
    from ._errors import ForgeCliError, ForgeError, ForgeInputError

    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("FORGE_CLI_DEBUG") == "1"
    if args[:1] == ["--debug"]:
        debug, args = True, args[1:]
    verb = args[0] if args else ""
    usage_code = USAGE_EXIT.get(verb, EX_USAGE)
    try:
        fast = fast_parse(args)
        if fast is not None:
            run, values = fast
            run(**values)
        else:
            _run_typer(args)
    except CliExit as done:
        if done.message:
            _fail(done.code, done.message)
        sys.stdout.flush()
        raise SystemExit(done.code) from None
    except UsageProblem as exc:
        _fail(usage_code, f"{verb}: {exc}" if exc.prefixed else str(exc))
    except ForgeInputError as exc:
        _fail(usage_code, f"{verb}: {exc}")
    except (ForgeCliError, ForgeError) as exc:
        _fail(1, _redact(str(exc)))
    except KeyboardInterrupt:
        _fail(130, "interrupted")
    except Exception as exc:  # the boundary: anything else is a bug, shown without secrets
        if debug:
            import traceback

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            sys.stderr.write(_redact(text))
        _fail(EX_SOFTWARE, f"internal error ({type(exc).__name__}); rerun with --debug")
    sys.stdout.flush()
    raise SystemExit(0)
