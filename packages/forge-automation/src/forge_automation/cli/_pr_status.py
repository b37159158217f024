"""forge-cli pr-status: a PR's state, head, mergeability, checks and blockers on one line.

pr-status runs often, so it overlaps its reads with Python's own start-up: the PR and the check
runs at `refs/pull/<n>/head` start as gh children (`_EarlyGh`) as soon as `main` sees a plain
`pr-status <ref> [--json]` (before argparse is imported), the library loads beside them, and the
base's rules and the behind count start the moment the PR answers. The wire still makes every
call and decides on every answer: a call started early is only answered sooner.
"""

from __future__ import annotations

import sys

from .._ghenv import gh_child_env, rest_args
from . import _common
from ._common import out, parallel, pr_ref, print_json, read_pr, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Sequence

    from .._exec import ExecOptions, ExecResult
    from .._port import ForgePort
    from .._types import CheckRun

__all__ = ["pr_status_command", "prefetch"]

# The wire's default timeout (`gh_cli_wire`).
_GH_TIMEOUT = 60.0


def prefetch(args: Sequence[str]) -> _EarlyGh | None:
    """Start pr-status's first two reads if `args` is a plain, valid `pr-status <ref> [--json]`.

    Anything else starts nothing: argparse then parses `args` as usual, and a usage error never
    follows a request.
    """
    rest = [a for a in args[1:] if a != "--json"]
    if args[:1] != ["pr-status"] or len(rest) != 1 or len(args) - len(rest) > 2:
        return None
    if rest[0].startswith("-"):
        return None
    try:
        repo, number = pr_ref(rest[0])
    except Exception:  # argparse and the command report it
        return None
    early = _EarlyGh()
    early.start(_get_args(f"repos/{repo}/pulls/{number}"))
    early.start(_get_args(_runs_path(repo, _pull_head(number))))
    return early


def _check_counts(runs: Sequence[CheckRun], head: str) -> tuple[int, int, list[str]]:
    from .._verdict import run_outcome

    latest: dict[tuple[str, int | None], CheckRun] = {}
    for run in sorted((r for r in runs if r.head_sha == head), key=lambda r: r.id):
        latest[(run.name, run.app_id)] = run
    outcomes = [(run.name, run_outcome(run, required=False)) for run in latest.values()]
    failing = [name for name, outcome in outcomes if outcome == "fail"]
    passed = sum(1 for _, outcome in outcomes if outcome == "pass")
    return passed, len(outcomes), failing


def pr_status_command(ref: str, as_json: bool = False, early: _EarlyGh | None = None) -> None:
    """Print a PR's state, head, mergeability, checks and merge blockers on one line."""
    import threading

    repo, number = pr_ref(ref)
    early = early or _EarlyGh()
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
        _pr_status(_common.port(early), repo, number, as_json=as_json)
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
        from .. import _port, _readiness, _verdict, _wire  # noqa: F401


def _pr_status(port: ForgePort, repo: str, number: int, *, as_json: bool) -> None:
    from dataclasses import replace

    from .._constants import ACTIONS_APP_ID
    from .._errors import ForgeCliError
    from .._port import load_required_contexts
    from .._readiness import merge_readiness

    pr = read_pr(port, repo, number, "pr-status")
    early_runs = _runs_at_pull_head(port, repo, number, pr.head_sha)
    # The base's rules, the head's runs and the behind count do not depend on each other.
    # (threads, not concurrent.futures: its import alone costs a gh call's tenth)
    is_open = pr.state == "open" and not pr.merged
    rules, runs, ancestry = parallel(
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
        print_json(
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
    out(
        f"{repo}#{number} {state}{' draft' if pr.draft else ''} head={short(pr.head_sha)} "
        f"mergeable={pr.mergeable_state} checks={passed}/{total} "
        f"failing={','.join(failing) or '-'} "
        f"{'ready' if readiness.ready else 'blocked'} blockers={blockers}"
    )


def _runs_at_pull_head(
    port: ForgePort, repo: str, number: int, head_sha: str
) -> tuple[CheckRun, ...] | None:
    """Return the runs read through `refs/pull/<n>/head` if they are provably `head_sha`'s.

    That read started before the PR was known, so it may describe another commit: the pull ref
    lags a push, or a push landed between the two reads. Only one complete page whose every run
    names `head_sha` is that commit's whole list; an empty page names no commit at all, and a
    later page could come from another commit than the first. None sends the caller to a read
    by sha, so a stale list can never pass for the current head's.
    """
    from .._errors import ForgeCliError, ForgeInputError
    from .._validate import validate_sha

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


def _base_reads(early: _EarlyGh, repo: str) -> Callable[[bytes | None], None]:
    """Return what starts the base's ruleset read and the behind count from the PR's answer.

    Its imports happen here, before the library loads beside the first reads, so that it runs
    the moment the PR answers. Only values that pass the checks the port makes reach a path;
    anything unexpected starts nothing, and the wire then makes those calls itself as usual.
    """
    import json
    from urllib.parse import quote

    from .._errors import ForgeInputError
    from .._validate import validate_branch, validate_sha

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

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        from .._exec import ExecResult
        from .._gh import run_gh

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

    def __init__(self, child: subprocess.Popen[bytes], env: dict[str, str]) -> None:
        self.child = child
        self.env = env
        self.answer: tuple[int, bytes, bytes] | None = None

    def finish(self, timeout: float | None) -> tuple[int, bytes, bytes]:
        """Wait for the child (at most `timeout` seconds, like run_gh) and keep its answer."""
        import subprocess

        from .._errors import ForgeCliError

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
