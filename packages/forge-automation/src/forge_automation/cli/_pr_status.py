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

    from .._errors import ForgeCliError
    from .._exec import ExecOptions, ExecResult, GhExec
    from .._gh import GhChild
    from .._types import CheckRun

    _Key = tuple[tuple[str, ...], bytes]

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
        started.follow()
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
    """A GhExec whose calls children started earlier answer, each once.

    `start` runs the snapshot read's gh now (through `_gh.start_gh`, the one launcher). `follow`
    waits for its answer and, when that names an open PR, starts the read of the PR's base's
    classic protection at once (pr-status's one REST read in the usual case), so that it runs
    beside the library's imports rather than after them. No thread: imports in two threads race
    (`dataclasses` reads a half-built `typing`). A later call with the same argv and stdin (no
    extra env, no cwd) gets that child's answer; every other call, and a retry, runs gh as usual
    through `run_gh`, so a mismatch costs time, never correctness: every answer still goes
    through `gh_call` and its parsers. `close()` stops every child nobody asked for.
    """

    def __init__(self, repo: tuple[str, int], key: _Key, child: GhChild | None) -> None:
        self.repo = repo
        self._key = key
        self._children: dict[_Key, GhChild] = {} if child is None else {key: child}
        self._failed: ForgeCliError | None = None

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
        return cls((repo, number), (tuple(args), body), child)

    def follow(self, timeout: float | None = _GH_TIMEOUT) -> None:
        """Wait for the snapshot's answer; start the classic-protection read it calls for."""
        from .._errors import ForgeCliError, ForgeError
        from .._gh import parse_gh_response, request_args, start_gh
        from .._github.rest import get_branch_protection
        from .._github.snapshot import open_pr_base

        child = self._children.get(self._key)
        if child is None or self._failed is not None:
            return
        try:
            answer = child.finish(timeout)
        except ForgeCliError as exc:  # its timeout: the snapshot's call raises it
            del self._children[self._key]
            self._failed = exc
            return
        response = parse_gh_response(answer.stdout)
        if answer.returncode != 0 or response is None or response.status != 200:
            return
        try:
            base = open_pr_base(response.json())
            if base is not None:
                args = request_args(get_branch_protection(self.repo[0], base))
                self._children[(tuple(args), b"")] = start_gh(args)
        except ForgeError:  # a hint not followed costs time only: the call runs gh itself
            return

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        from .._gh import run_gh

        if options.env or options.cwd is not None:
            return run_gh(args, options)
        key = (tuple(args), options.input or b"")
        if key == self._key and self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed
        child = self._children.pop(key, None)
        return child.finish(options.timeout) if child is not None else run_gh(args, options)

    def close(self) -> None:
        """Stop every child whose answer was never asked for."""
        children, self._children = list(self._children.values()), {}
        for child in children:
            child.stop()
