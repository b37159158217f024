"""forge-cli ci-wait: poll CI on a pushed sha until GREEN (0), RED (1) or TIMEOUT (2)."""

from __future__ import annotations

from ._common import EXIT_UNAVAILABLE, EXIT_USAGE, CliExit, UsageError, out, port, repo_name

__all__ = ["ci_wait_command"]


def ci_wait_command(repo: str, sha: str, timeout: float = 1800.0, interval: float = 15.0) -> None:
    """Wait for CI on a sha: GREEN (0), RED (1) or TIMEOUT (2); no verdict exits 69."""
    from .._ci_wait import ci_wait
    from .._errors import ForgeCliError, ForgeInputError
    from .._redact import redact_forge_secrets

    repo_name(repo)
    failure = ""
    try:
        result = ci_wait(port(), repo, sha, timeout=timeout, interval=interval)
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    except ForgeCliError as exc:
        if exc.status in (404, 422):
            raise CliExit(EXIT_USAGE, f"unknown sha {sha} in {repo}") from None
        failure = redact_forge_secrets(str(exc))
    if failure:
        # Never RED's code without a RED line: a read that failed for good is no verdict.
        raise CliExit(EXIT_UNAVAILABLE, f"ci-wait: no verdict for {sha}: {failure}")
    reasons = ", ".join(result.reasons) or "-"
    word = {"green": "GREEN", "red": "RED", "timeout": "TIMEOUT"}[result.verdict]
    out(f"{word} {repo} {sha} {reasons}")
    raise CliExit({"green": 0, "red": 1, "timeout": 2}[result.verdict])
