"""forge-cli ci-wait: poll CI on a pushed sha, or on a PR's head, until a verdict.

`ci-wait <repo> <sha>` or `ci-wait <repo>#<n>`: GREEN (0), RED (1), TIMEOUT (2), and for the PR
form MOVED (3) when the PR's head is another commit than the one the wait judged. `--required`
counts only the base branch's required contexts (the PR's base; for a sha, `--base` or the
repository's default branch), `--fail-fast` ends RED on the first failure, `--grace S` turns a
required check that has not reported S seconds in into RED (`<name>=never reported`).
Progress goes to stderr as checks start and finish (`_progress`; none with `--quiet`);
`--json` prints the verdict as one JSON object (the README documents its keys).
"""

from __future__ import annotations

import sys

from ._common import (
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CliExit,
    UsageError,
    out,
    port,
    pr_ref,
    print_json,
    repo_name,
)

__all__ = ["EXIT_MOVED", "ci_wait_command"]

# The PR form's own code: the head moved, so no verdict on the PR's current head was reached.
EXIT_MOVED = 3


def ci_wait_command(
    target: str,
    sha: str | None = None,
    *,
    timeout: float = 1800.0,
    interval: float = 15.0,
    required: bool = False,
    fail_fast: bool = False,
    grace: float | None = None,
    base: str | None = None,
    quiet: bool = False,
    as_json: bool = False,
) -> None:
    """Wait for CI: GREEN (0), RED (1), TIMEOUT (2), MOVED (3); no verdict exits 69."""
    from .._ci_wait import (
        NoRequiredChecks,
        check_wait_bounds,
        ci_wait,
        ci_wait_pr,
        required_contexts,
    )
    from .._errors import ForgeCliError, ForgeInputError
    from .._redact import redact_forge_secrets
    from .._types import RequiredContext
    from ._progress import CiReport

    number: int | None = None
    if "#" in target:
        if sha is not None:
            raise UsageError("give <repo> <sha> or <repo>#<n>, not both")
        if base is not None:
            raise UsageError("--base is for the <repo> <sha> form: a PR waits on its own base")
        repo, number = pr_ref(target)
    else:
        if sha is None:
            raise UsageError("expected <repo> <sha> or <repo>#<n>")
        if base is not None and not required:
            raise UsageError("--base needs --required")
        repo = repo_name(target)
    try:
        check_wait_bounds(timeout, interval, grace)  # before any read
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    failure = ""
    forge = port()
    report = None if quiet else CiReport(sys.stderr, tty=sys.stderr.isatty(), command="ci-wait")
    try:
        if number is not None:
            result = ci_wait_pr(
                forge,
                repo,
                number,
                required=required,
                timeout=timeout,
                interval=interval,
                fail_fast=fail_fast,
                grace=grace,
                on_poll=report,
            )
        else:
            assert sha is not None
            rules: tuple[RequiredContext, ...] = ()
            if required:
                if base is not None and forge.wire.get_ref_sha(repo, f"heads/{base}") is None:
                    # Any name reads as a branch without rules: say it is not there instead.
                    raise CliExit(
                        EXIT_USAGE,
                        f"ci-wait: no branch {base!r} in {repo} (--base names the branch whose "
                        "required checks count)",
                    )
                branch = base if base is not None else forge.wire.get_default_branch(repo)
                rules = required_contexts(forge, repo, branch)
            result = ci_wait(
                forge,
                repo,
                sha,
                rules=rules,
                timeout=timeout,
                interval=interval,
                fail_fast=fail_fast,
                grace=grace,
                on_poll=report,
            )
    except NoRequiredChecks as exc:
        raise CliExit(EXIT_UNAVAILABLE, f"ci-wait: no verdict: {exc}") from None
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    except ForgeCliError as exc:
        if exc.status in (404, 422):
            what = (
                f"no PR {repo}#{number} (or no access to it)"
                if number
                else f"unknown sha {sha} in {repo}"
            )
            raise CliExit(EXIT_USAGE, what) from None
        failure = redact_forge_secrets(str(exc))
    if failure:
        # Never RED's code without a RED line: a read that failed for good is no verdict.
        what = f"{repo}#{number}" if number is not None else str(sha)
        raise CliExit(EXIT_UNAVAILABLE, f"ci-wait: no verdict for {what}: {failure}")
    code = {"green": 0, "red": 1, "timeout": 2, "moved": EXIT_MOVED}[result.verdict]
    if as_json:
        print_json(
            {
                "verdict": result.verdict,
                "repo": repo,
                "pr": number,
                "sha": result.sha,
                "moved_to": result.moved_to,
                "reasons": list(result.reasons),
                "polls": result.polls,
            }
        )
    elif result.verdict == "moved":
        out(f"MOVED {repo}#{number} {result.sha} {result.moved_to}")
    else:
        reasons = ", ".join(result.reasons) or "-"
        out(f"{result.verdict.upper()} {repo} {result.sha} {reasons}")
    raise CliExit(code)
