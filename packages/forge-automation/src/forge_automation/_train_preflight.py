"""Before a batched train's first car on a base: will the checks run there, and how long to wait.

`preflight` answers two questions from what the forge holds, nothing guessed:

1. Will each required check report on a car branch (`train/<base>/<id>`)? A check GitHub
   Actions runs needs a workflow in `.github/workflows/` on the base whose `on:` fires on a push
   to that branch: `push` without a branch filter, or `branches` / `branches-ignore` globs
   matching it by GitHub's filter-pattern rules (`*` stops at `/`, `**` does not, `?` and `+`
   repeat the character before, `[a-z0-9]` one of a set, `!` excludes, `\\` escapes). A check
   from another app or a commit status comes from an external CI whose configuration cannot
   be read: a NOTE says so and the train goes on. A required check is taken as Actions' when it
   is pinned to the Actions app or the base's recent commits show it as an Actions run; a check
   seen nowhere is Actions' when the base has workflow files. When no workflow fires on the car
   branch, the train stops at once naming the fix (labels kept, nothing built).
   A workflow file that cannot be read (the forge's read failed, or it is too large for the
   contents API) stops the train naming it: a failed read is never a yes. A file that reads but
   does not parse as a workflow (YAML error, no `on:`) is one GitHub does not run either: it
   counts as not firing and a NOTE names it.
2. How long is "never reported"? Without `--grace`, per required check from the base's check
   history: on each of the last `HISTORY` first-parent commits of the base, how long after the
   commit's first check started this check started (a job behind `needs:` registers late); the
   grace is `GRACE_FLOOR + GRACE_FACTOR` times the longest such delay, at most the timeout. A
   check with no completed run in that history keeps `DEFAULT_TRAIN_GRACE`. A GRACE line says
   which grace each check got and why.

YAML is read with PyYAML (`yaml.safe_load`), imported only here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ._constants import ACTIONS_APP_ID
from ._errors import ForgeError
from ._port import ForgePort
from ._redact import exception_reason
from ._train_car import CAR_PREFIX
from ._types import CheckRun, CommitStatus, RequiredContext

__all__ = ["GRACE_FACTOR", "GRACE_FLOOR", "HISTORY", "Preflight", "filter_matches", "push_fires"]

# How many first-parent commits of the base the grace is derived from.
HISTORY = 4
# The grace is GRACE_FLOOR + GRACE_FACTOR x the longest delay seen, at most the timeout: GitHub
# registers a workflow's first jobs seconds after a push, so the floor covers that, and twice
# the slowest late start seen leaves room for a slower runner queue than the history's.
GRACE_FLOOR = 120.0
GRACE_FACTOR = 2.0
_WORKFLOWS = ".github/workflows"
_SET = re.compile(r"[A-Za-z0-9\-]+")


class PreflightStop(Exception):
    """The train cannot run on this base as it is configured; the message names the fix."""


@dataclass(slots=True)
class Preflight:
    """What a base's preflight found: each required check's grace (seconds)."""

    graces: dict[str, float] = field(default_factory=dict)


def filter_matches(pattern: str, ref: str) -> bool:
    """Whether GitHub's branch filter `pattern` (without a leading `!`) matches `ref`."""
    return re.fullmatch(_regex(pattern), ref) is not None


def _regex(pattern: str) -> str:
    atoms: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            atoms.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern.startswith("**", i):
            atoms.append(".*")
            i += 2
        elif c == "*":
            atoms.append("[^/]*")
            i += 1
        elif c in "?+" and atoms and atoms[-1] not in (".*", "[^/]*"):
            atoms[-1] = f"(?:{atoms[-1]}){c}"  # zero or one / one or more of the one before
            i += 1
        elif (
            c == "["
            and (end := pattern.find("]", i + 1)) > i + 1
            and _SET.fullmatch(pattern[i + 1 : end])
        ):
            atoms.append(pattern[i : end + 1])  # one alphanumeric of the set or its ranges
            i = end + 1
        else:
            atoms.append(re.escape(c))
            i += 1
    return "".join(atoms)


def _patterns(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(p) for p in items if p is not None]


def _listed(patterns: Sequence[str], ref: str) -> bool:
    """GitHub's ordered filter: a later `!pattern` excludes, a later pattern includes again."""
    hit = False
    for pattern in patterns:
        if pattern.startswith("!"):
            hit = hit and not filter_matches(pattern[1:], ref)
        elif filter_matches(pattern, ref):
            hit = True
    return hit


def push_fires(on: object, branch: str) -> tuple[bool, str]:
    """Whether a workflow's `on:` value runs it on a push to `branch`, and why (for a NOTE)."""
    if isinstance(on, str):
        on = [on]
    if isinstance(on, list):
        return ("push" in on, "on: push" if "push" in on else "no push trigger")
    if not isinstance(on, Mapping) or "push" not in on:
        return False, "no push trigger"
    push = on["push"]
    if push is None:
        return True, "on: push"
    if not isinstance(push, Mapping):
        return False, "on.push is neither empty nor a mapping"
    if "branches" in push and "branches-ignore" in push:
        return False, "on.push has both branches and branches-ignore (GitHub refuses that)"
    if "branches" in push:
        hit = _listed(_patterns(push["branches"]), branch)
        return hit, f"on.push.branches {'matches' if hit else 'does not match'} {branch}"
    if "branches-ignore" in push:
        hit = _listed(_patterns(push["branches-ignore"]), branch)
        return not hit, f"on.push.branches-ignore {'matches' if hit else 'spares'} {branch}"
    if "tags" in push or "tags-ignore" in push:
        return False, "on.push filters tags only, so no branch push runs it"
    return True, "on: push"


def _on(document: object) -> object:
    """A workflow's `on:`; YAML 1.1 (PyYAML) reads an unquoted `on` key as True."""
    if not isinstance(document, Mapping):
        raise ValueError("not a mapping")
    for key in ("on", True):
        if key in document:
            return document[key]
    raise ValueError("no `on:`")


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _matches(rule: RequiredContext, run: CheckRun) -> bool:
    return run.name == rule.context and (rule.app_id is None or rule.app_id == run.app_id)


@dataclass(slots=True)
class _History:
    """What the base's recent commits show of each required check."""

    delays: dict[str, list[float]] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # context -> actions | app | status

    def add(
        self,
        rules: Sequence[RequiredContext],
        runs: Sequence[CheckRun],
        statuses: Sequence[CommitStatus],
    ) -> None:
        starts = [_seconds(r.started_at) for r in runs] + [_seconds(s.created_at) for s in statuses]
        known = [s for s in starts if s is not None]
        if not known:
            return
        first = min(known)
        for rule in rules:
            mine = [r for r in runs if _matches(rule, r)]
            done = [r for r in mine if r.status == "completed"]
            began = [s for r in done if (s := _seconds(r.started_at)) is not None]
            if began:
                self.delays.setdefault(rule.context, []).append(min(began) - first)
            if mine:
                actions = any(r.app_id == ACTIONS_APP_ID for r in mine)
                self.source.setdefault(rule.context, "actions" if actions else "app")
            elif rule.app_id is None and any(s.context == rule.context for s in statuses):
                self.source.setdefault(rule.context, "status")


def preflight(
    port: ForgePort,
    repo: str,
    base: str,
    rules: Sequence[RequiredContext],
    *,
    emit: Callable[[str], None],
    timeout: float,
    grace: float | None,
    default_grace: float,
) -> Preflight:
    """Check that `base`'s required checks will run on a car branch; derive their graces.

    Raises PreflightStop naming the fix when they will not; ForgeError when a read fails.
    """
    history = _history(port, repo, base, rules)
    _check_triggers(port, repo, base=base, rules=rules, history=history, emit=emit)
    found = Preflight()
    said: list[str] = []
    for rule in rules:
        name = rule.context
        delays = history.delays.get(name, [])
        if grace is not None:
            found.graces[name] = grace
            said.append(f"{name}={grace:g}s (--grace)")
        elif delays:
            derived = min(timeout, GRACE_FLOOR + GRACE_FACTOR * max(delays))
            found.graces[name] = derived
            said.append(
                f"{name}={derived:g}s (started up to {max(delays):g}s after the first check "
                f"on {len(delays)} of {base}'s last {HISTORY} commits)"
            )
        else:
            found.graces[name] = default_grace
            said.append(f"{name}={default_grace:g}s (default: no completed run on {base} yet)")
    emit(f"GRACE {repo} {base}: {', '.join(said)}")
    return found


def _history(port: ForgePort, repo: str, base: str, rules: Sequence[RequiredContext]) -> _History:
    history = _History()
    sha = port.get_head_sha(repo, base)
    for _ in range(HISTORY):
        if sha is None:
            break
        history.add(rules, port.check_runs(repo, sha), port.commit_statuses(repo, sha))
        parents = port.commit_parents(repo, sha)
        sha = parents[0] if parents else None
    return history


def _check_triggers(
    port: ForgePort,
    repo: str,
    *,
    base: str,
    rules: Sequence[RequiredContext],
    history: _History,
    emit: Callable[[str], None],
) -> None:
    branch = f"{CAR_PREFIX}{base}/0123456789ab"
    files = port.workflow_files(repo, base)
    actions: list[str] = []
    for rule in rules:
        source = history.source.get(rule.context)
        if rule.app_id is not None and rule.app_id != ACTIONS_APP_ID:
            source = "app"
        elif rule.app_id == ACTIONS_APP_ID:
            source = "actions"
        if source in ("app", "status") or (source is None and not files):
            what = "a commit status" if source == "status" else "an app other than Actions"
            if source is None:
                what = "no workflow on the base, so an external CI"
            emit(
                f"NOTE {repo} {base}: required check {rule.context} comes from {what}; its "
                f"configuration cannot be read here, so make sure it runs on pushes to "
                f"{CAR_PREFIX}** (the train waits for it on each car)"
            )
        else:
            actions.append(rule.context)
    if not actions:
        return
    firing: list[str] = []
    with_push: list[str] = []
    import yaml  # type: ignore[import-untyped]  # only here; no stubs: its Any is checked below

    for path in files:
        try:
            text = port.text_file(repo, path, base)
        except ForgeError as exc:
            raise PreflightStop(f"cannot read {path} on {base}: {exception_reason(exc)}") from None
        if text is None:
            raise PreflightStop(f"cannot read {path} on {base}: it is listed but not there")
        try:
            on = _on(yaml.safe_load(text))
        except (yaml.YAMLError, ValueError) as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            emit(
                f"NOTE {repo} {base}: {path} is not a workflow GitHub can run ({reason}); it "
                "counts as not running on car branches"
            )
            continue
        fires, why = push_fires(on, branch)
        if fires:
            firing.append(path)
        elif why != "no push trigger":
            with_push.append(path)
    if firing:
        return
    checks = ", ".join(actions)
    if with_push:
        fix = f"add `{CAR_PREFIX}**` to on.push.branches in {with_push[0]}"
    elif files:
        fix = f"add a push trigger with branches [`{CAR_PREFIX}**`] to on: in {files[0]}"
    else:
        fix = f"add a workflow to {_WORKFLOWS}/ that runs on pushes to `{CAR_PREFIX}**`"
    raise PreflightStop(
        f"no workflow on {base} runs on a push to a car branch ({CAR_PREFIX}{base}/...), so "
        f"the required checks {checks} would never report there: {fix}"
    )
