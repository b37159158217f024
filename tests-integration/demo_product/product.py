"""The demo product's command registry: accounts through `agent_accounts.io`, PRs through the forge.

Built as a user's product would build it, on public names only. Forge calls are synchronous `gh`
subprocesses (or the in-memory fake), so these commands are plain functions that the daemon runs
in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_accounts import window_forecast
from agent_accounts.io import (
    Profile,
    discover_profiles,
    read_login_state,
    read_usage,
    read_usage_history,
)
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    ForgeCliError,
    ForgeError,
    ForgeInputError,
    ForgePort,
    PullRequest,
    SquashCommit,
    format_squash_message,
    load_required_contexts,
    merge_readiness,
)
from forge_automation import ci_verdict as judge_ci
from local_daemon import CommandError, Registry

__all__ = ["build_registry", "forge_errors_as_command_errors", "why_the_forge_failed"]

_PASSING = frozenset({"success", "neutral", "skipped"})
_CHART_POINTS = 60
_CHART_SPAN_S = 24 * 3600


def _history_and_forecast(config_dir: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each window's last day as at most 60 `[t, used]` points, and its forecast (or None)."""
    import time

    now = time.time()
    try:
        history = read_usage_history(config_dir, now=now, since=now - 7 * 86400)
    except OSError:
        return {}, {}
    names = sorted({name for reading in history for name in reading["rate_limits"]})
    charts: dict[str, Any] = {}
    forecasts: dict[str, Any] = {}
    for name in names:
        points = [
            [r["written_at"], r["rate_limits"][name]["used_percentage"]]
            for r in history
            if name in r["rate_limits"] and r["written_at"] >= now - _CHART_SPAN_S
        ]
        step = max(1, len(points) // _CHART_POINTS)
        charts[name] = [*points[-1::-step][::-1]]
        found = window_forecast(name, history, now)
        forecasts[name] = None if found is None else found.to_json()
    return charts, forecasts


def forge_errors_as_command_errors(exc: ForgeError) -> CommandError:
    """Map a forge failure to the daemon's command codes (65 bad input, 77 refused, 75 limited)."""
    if isinstance(exc, ForgeInputError):
        return CommandError(f"bad {exc.field}", 65)
    if isinstance(exc, ForgeCliError) and exc.status in (401, 403):
        return CommandError("the forge refused the request", 77)
    if isinstance(exc, ForgeCliError) and exc.status == 429:
        return CommandError("the forge's rate limit is spent", 75)
    if isinstance(exc, ForgeCliError) and exc.status == 404:
        return CommandError("not found on the forge", 65)
    raise exc


def why_the_forge_failed(exc: ForgeError, repo: str) -> str:
    """Say in fixed words why no PR could be read (never the error's text: it may hold a token)."""
    status = exc.status if isinstance(exc, ForgeCliError) else None
    if status in (401, 403):
        return "the forge refused gh's credentials: run `gh auth login` (or check GH_TOKEN)"
    if status == 404:
        return f"{repo} was not found, or gh's login cannot see it"
    if status == 429:
        return "the forge's rate limit is spent; the page retries on the next change"
    if isinstance(exc, ForgeCliError):
        return "gh could not read the forge: is gh installed and logged in? (`gh auth status`)"
    return f"the forge answered something this demo cannot read ({type(exc).__name__})"


def _check_counts(runs: Sequence[CheckRun], head: str) -> dict[str, Any]:
    latest: dict[str, CheckRun] = {}
    for run in runs:
        if run.head_sha == head:
            latest[run.name] = run
    failing = sorted(
        name
        for name, run in latest.items()
        if run.status == "completed" and run.conclusion not in _PASSING
    )
    passed = sum(1 for run in latest.values() if run.conclusion in _PASSING)
    return {"passed": passed, "total": len(latest), "failing": failing}


def _pr_row(port: ForgePort, repo: str, pr: PullRequest) -> dict[str, Any]:
    rules = load_required_contexts(port, repo, pr.base_ref)
    runs = port.check_runs(repo, pr.head_sha)
    apps = {ACTIONS_APP_ID} | {c.app_id for c in rules.contexts if c.app_id is not None}
    # Approval lives elsewhere: judging against the PR's own head drops the unapproved blocker.
    readiness = merge_readiness(
        pr=pr, rules=rules, runs=runs, required_apps=apps, approved_head=pr.head_sha
    )
    return {
        "number": pr.number,
        "title": pr.title,
        "state": "merged" if pr.merged else pr.state,
        "headSha": pr.head_sha,
        "baseRef": pr.base_ref,
        "mergeableState": pr.mergeable_state,
        "checks": _check_counts(runs, pr.head_sha),
        "ready": readiness.ready,
        "blockers": [{"reason": b.reason, "detail": b.detail} for b in readiness.blockers],
    }


def build_registry(
    *,
    port: ForgePort,
    repo: str,
    profiles: Callable[[], list[Profile]] | None = None,
) -> Registry:
    """Build the product's registry over one forge port, one repo and the local profiles."""
    registry = Registry()
    list_profiles = profiles or discover_profiles

    @registry.command
    def accounts() -> dict[str, Any]:
        """Every local profile's login state, newest usage reading, the last day of its usage
        history per window and when each window fills (no request is sent)."""
        rows = []
        found = list_profiles()
        if not found:
            return {
                "profiles": [],
                "problem": "no agent profiles in ~/.agent or ~/.agent-profiles/",
            }
        for profile in found:
            try:
                login = read_login_state(profile.config_dir).to_json()
            except OSError:
                login = {"status": "unreadable"}
            usage = read_usage(profile.config_dir)
            charts, forecasts = _history_and_forecast(str(profile.config_dir))
            rows.append(
                {
                    "label": profile.label,
                    "login": login,
                    "history": charts,
                    "forecast": forecasts,
                    "usage": None
                    if usage is None
                    else {
                        "written_at": usage.reading["written_at"],
                        "age_seconds": usage.age_seconds,
                        "rate_limits": usage.reading["rate_limits"],
                    },
                }
            )
        return {"profiles": rows}

    @registry.command
    def open_prs() -> dict[str, Any]:
        """The demo repository's open PRs with their merge readiness and blockers.

        A forge that cannot be read is not an error here: the page shows `problem`, the reason
        its table is empty (no gh login, no such repository, a spent rate limit).
        """
        try:
            prs = port.list_open_prs(repo)
            rows = [_pr_row(port, repo, port.get_pr(repo, pr.number)) for pr in prs]
        except ForgeError as exc:
            return {"repo": repo, "prs": [], "problem": why_the_forge_failed(exc, repo)}
        return {"repo": repo, "prs": sorted(rows, key=lambda r: r["number"])}

    @registry.command
    def pr_status(number: int) -> dict[str, Any]:
        """One PR's state, checks and merge blockers, judged against the base's required checks."""
        try:
            return {"repo": repo, **_pr_row(port, repo, port.get_pr(repo, number))}
        except ForgeError as exc:
            raise forge_errors_as_command_errors(exc) from None

    @registry.command
    def pr_context(number: int) -> dict[str, Any]:
        """A PR's title, base, head sha, changed files and body."""
        try:
            pr = port.get_pr(repo, number)
            files = [f.path for f in port.list_pr_files(repo, number)]
        except ForgeError as exc:
            raise forge_errors_as_command_errors(exc) from None
        return {
            "title": pr.title,
            "base": pr.base_ref,
            "headSha": pr.head_sha,
            "files": files,
            "body": pr.body,
        }

    @registry.command
    def ci_verdict(sha: str) -> dict[str, Any]:
        """The CI verdict for a pushed sha: green, red or pending, with the reasons."""
        try:
            base = port.wire.get_default_branch(repo)
            rules = load_required_contexts(port, repo, base)
            verdict = judge_ci(
                rules=rules,
                runs=port.check_runs(repo, sha),
                statuses=port.commit_statuses(repo, sha),
            )
        except ForgeError as exc:
            raise forge_errors_as_command_errors(exc) from None
        return {"verdict": verdict.verdict, "reasons": list(verdict.reasons)}

    @registry.command
    def squash_message(
        title: str, body: str, pr_number: int, task_ids: list[str], commits: list[dict[str, str]]
    ) -> dict[str, str]:
        """The squash-merge subject and body for a PR."""
        try:
            message = format_squash_message(
                title=title,
                body=body,
                pr_number=pr_number,
                task_ids=task_ids,
                commits=[
                    SquashCommit(subject=c["subject"], body=c.get("body", "")) for c in commits
                ],
            )
        except (ForgeError, KeyError):
            raise CommandError("bad squash message input", 65) from None
        return {"subject": message.subject, "body": message.body}

    return registry
