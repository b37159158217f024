"""forge-cli pr-status: a PR's state, head, mergeability, checks and blockers on one line.

pr-status runs often, so its one forge read (`PR_SNAPSHOT_QUERY`: the PR, its head's check runs
and its base's rules in one GraphQL document) starts as a gh child through the package's one gh
transport (`_gh.start_gh`) as soon as `main` sees a plain `pr-status <ref> [--json]`, before
argparse and the library are imported; the library then loads while gh waits on the forge. The
read is an ordinary `gh_call` whose first attempt this child answers (`_Prestarted`); whatever the
document cannot answer whole is read over REST afterwards (`complete_pr_snapshot`).
"""

from __future__ import annotations

from ._common import USAGE_EXIT, CliExit, out, pr_ref, print_json, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._exec import ExecOptions, ExecResult, GhExec
    from .._gh import GhChild
    from .._types import CheckRun

__all__ = ["pr_status_command", "prefetch"]

# The wire's default timeout (`gh_cli_wire`).
_GH_TIMEOUT = 60.0


def prefetch(args: Sequence[str]) -> _Prestarted | None:
    """Start pr-status's read if `args` is a plain, valid `pr-status <ref> [--json]`.

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
    return _Prestarted.start(repo, number)


def _check_counts(runs: Sequence[CheckRun], head: str) -> tuple[int, int, list[str]]:
    from .._verdict import run_outcome

    latest: dict[tuple[str, int | None], CheckRun] = {}
    for run in sorted((r for r in runs if r.head_sha == head), key=lambda r: r.id):
        latest[(run.name, run.app_id)] = run
    outcomes = [(run.name, run_outcome(run, required=False)) for run in latest.values()]
    failing = [name for name, outcome in outcomes if outcome == "fail"]
    passed = sum(1 for _, outcome in outcomes if outcome == "pass")
    return passed, len(outcomes), failing


def pr_status_command(ref: str, as_json: bool = False, early: _Prestarted | None = None) -> None:
    """Print a PR's state, head, mergeability, checks and merge blockers on one line."""
    repo, number = pr_ref(ref)
    started = early if early is not None and early.repo == (repo, number) else None
    if started is None:
        started = _Prestarted.start(repo, number)
    try:
        _pr_status(started, repo, number, as_json=as_json)
    finally:
        started.close()


def _pr_status(
    exec: GhExec, repo: str, number: int, *, as_json: bool, timeout: float = _GH_TIMEOUT
) -> None:
    from .._constants import ACTIONS_APP_ID
    from .._errors import ForgeCliError
    from .._parallel import parallel
    from .._pr_snapshot import complete_pr_snapshot, pr_review_state, read_pr_snapshot
    from .._readiness import describe_blocker, merge_readiness

    try:
        snapshot = read_pr_snapshot(exec, repo, number, timeout=timeout)
    except ForgeCliError as exc:
        if exc.kind == "not-found":
            message = f"pr-status: no PR {repo}#{number} (or no access to it)"
            raise CliExit(USAGE_EXIT["pr-status"], message) from None
        raise
    first = snapshot
    reviews = None
    if first.pr.state == "open" and not first.pr.merged:
        from .._pr_snapshot import read_classic_protection, rest_port
        from .._rules import load_branch_rules, rules_with_classic

        # The one rule policy premerge uses: rulesets (the document's, when it answered them)
        # and classic protection, layered. Then what the document lacks, beside the reviews.
        base = first.pr.base_ref
        if first.rules is not None:
            # The usual case: classic protection is the one REST read, and the wire stays unloaded.
            branch = rules_with_classic(
                repo,
                base,
                first.rules,
                lambda: read_classic_protection(exec, repo, base, timeout=timeout),
            )
        else:
            branch = load_branch_rules(rest_port(exec, timeout), repo, base)
        snapshot, reviews = parallel(
            lambda: complete_pr_snapshot(first, exec, repo, timeout=timeout, rules=branch),
            lambda: pr_review_state(first, exec, repo, timeout=timeout, rules=branch),
        )
    else:
        snapshot = complete_pr_snapshot(first, exec, repo, timeout=timeout)
    pr, rules, runs = snapshot.pr, snapshot.rules, snapshot.runs
    # complete_pr_snapshot sets both.
    assert rules is not None
    assert runs is not None
    apps = {ACTIONS_APP_ID} | {c.app_id for c in rules.contexts if c.app_id is not None}
    # Approval lives elsewhere: judging against the PR's own head drops the unapproved blocker.
    readiness = merge_readiness(
        pr=pr,
        rules=rules,
        runs=runs,
        required_apps=apps,
        approved_head=pr.head_sha,
        reviews=reviews,
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
    blockers = "; ".join(describe_blocker(b) for b in readiness.blockers) or "none"
    out(
        f"{repo}#{number} {state}{' draft' if pr.draft else ''} head={short(pr.head_sha)} "
        f"mergeable={pr.mergeable_state} checks={passed}/{total} "
        f"failing={','.join(failing) or '-'} "
        f"{'ready' if readiness.ready else 'blocked'} blockers={blockers}"
    )


class _Prestarted:
    """A GhExec whose first call, if it is the snapshot read, a child started earlier answers.

    `start` runs the snapshot read's gh now (through `_gh.start_gh`, the one launcher); the
    read's `gh_call` later makes the same call (same argv and stdin, no extra env) and gets that
    child's answer. Every other call, and a retry, runs gh as usual through `run_gh`, so a
    mismatch costs time, never correctness. `close()` stops the child if nobody asked for it.
    """

    def __init__(
        self, repo: tuple[str, int], args: list[str], input: bytes, child: GhChild | None
    ) -> None:
        self.repo = repo
        self._args = args
        self._input = input
        self._child = child

    @classmethod
    def start(cls, repo: str, number: int) -> _Prestarted:
        """Start the snapshot read of `repo#number`; a gh that cannot start is left to the call."""
        import contextlib

        from .._errors import ForgeCliError
        from .._gh import graphql_args, start_gh
        from .._github.snapshot import pr_snapshot_request

        args, body = graphql_args(), pr_snapshot_request(repo, number)
        child = None
        # A gh that cannot start: the call itself runs gh again and reports why.
        with contextlib.suppress(ForgeCliError):
            child = start_gh(args, input=body)
        return cls((repo, number), args, body, child)

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        from .._gh import run_gh

        child, self._child = self._child, None
        if child is None:
            return run_gh(args, options)
        if (
            list(args) != self._args
            or options.input != self._input
            or options.env
            or options.cwd is not None
        ):
            child.stop()
            return run_gh(args, options)
        return child.finish(options.timeout)

    def close(self) -> None:
        """Stop the child if its answer was never asked for."""
        child, self._child = self._child, None
        if child is not None:
            child.stop()
