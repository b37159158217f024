"""What every kind of train shares: its settings, its result, and the writes that end a PR's turn.

A train (`_train_turn`: one PR at a time) is a `_Train`: the port, the repository, the label and
the settings `run_train` validated, plus the `TrainResult` it fills. A turn ends in one of four
outcomes, raised as exceptions so that any depth of the turn can end it: `_Stop` (the train
cannot go on without a rerun; the PR keeps its label), `_Moved` (the head moved: walk it first),
`_Again` (the forge refused for a reason that is not the PR's fault yet) and `_Drop` (the PR
cannot merge: comment, unlabel, go on).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict

from ._ci_wait import CiPoll, CiWaitResult, ci_wait
from ._errors import ForgeCliError, ForgeError, ForgeInputError
from ._exec import ExecOptions, GitExec
from ._merge import delete_head_branch
from ._port import ForgePort
from ._redact import exception_reason
from ._train import TrainResult, train_marker
from ._types import LabelledPr, PullRequest, RequiredContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._train_summary import TrainSummary

_FETCH_TIMEOUT = 300.0
# How each CI wait's verdict reads in the train's lines.
_WORD = {"green": "GREEN", "red": "RED", "timeout": "TIMEOUT", "moved": "MOVED"}


class _Stop(Exception):
    """The train cannot go on without a rerun (a failed read, a fetch); the PR keeps its label."""


class _Moved(Exception):
    """The PR's head is no longer the one being judged: walk it before anything else."""

    def __init__(self, head: str, to: str | None) -> None:
        super().__init__(f"the head moved from {head} to {to}")
        self.head = head
        self.to = to


class _Again(Exception):
    """The forge refused for a reason that is not the PR's fault yet: judge it again."""


class _Drop(Exception):
    """This PR cannot merge: comment, unlabel, go on."""

    def __init__(self, blocker: str, head: str) -> None:
        super().__init__(blocker)
        self.blocker = blocker
        self.head = head


class _Gate(TypedDict):
    """What premerge and the guarded merge take from the train besides the PR and its head."""

    clone: str | None
    git: GitExec | None
    sleep: Callable[[float], None]
    delays: Sequence[float]


@dataclass(slots=True, kw_only=True)
class _Train:
    """One run of a train: what `run_train` was given (validated) and what the run did."""

    port: ForgePort
    repo: str
    label: str
    emit: Callable[[str], None]
    clone: str | None
    dry_run: bool
    timeout: float
    interval: float
    grace: float
    git: GitExec | None
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    delays: Sequence[float]
    on_poll: Callable[[CiPoll], None] | None
    batch: int | None = None
    max_wait: float = 0.0
    retry_flaky: int = 0
    land: str = "merge"
    speculate: int = 0
    max_cars: int | None = None
    explain: Callable[[str, str, str], str | None] | None = None
    # Whether `grace` was given (else each required check's grace comes from its history).
    grace_given: bool = True
    # Each required check's "never reported" grace, from the preflight of its base.
    graces: dict[str, float] = field(default_factory=dict)
    # The batched train's summary comment (None: the serial train, a dry run, or it failed).
    summary: TrainSummary | None = field(default=None, init=False)
    result: TrainResult = field(init=False)

    def __post_init__(self) -> None:
        self.result = TrainResult(repo=self.repo, label=self.label)

    def run(self) -> TrainResult:
        """List the labelled PRs, ride the train over them, end with DONE unless it stopped."""
        try:
            rows = self.port.list_labelled_prs(self.repo, self.label, state="all")
        except ForgeInputError:
            raise
        except ForgeError as exc:
            if isinstance(exc, ForgeCliError) and exc.status == 404:
                raise  # no such repository (or none visible): no train to stop or rerun
            self._stopped(0, f"cannot list the PRs labelled {self.label}: {exception_reason(exc)}")
            return self.result
        listed = ",".join(f"#{r.number}" for r in rows) or "none"
        mode = " (dry run: nothing is written)" if self.dry_run else ""
        self.emit(f"TRAIN {self.repo} label={self.label} prs={listed}{self._shape()}{mode}")
        if self.batch is not None and not self.dry_run:
            self._summarize("running", opening=True)
        self._ride(rows)
        if self.result.stopped is None:
            merged, dropped = len(self.result.merged), len(self.result.dropped)
            tail = " (dry run)" if self.dry_run else ""
            flaky = f" flaky={len(self.result.flaky)}" if self.result.flaky else ""
            self.emit(f"DONE {self.repo} merged={merged} dropped={dropped}{flaky}{tail}")
        self._summarize("done" if self.result.stopped is None else "stopped", force=True)
        return self.result

    def _summarize(self, status: str, *, opening: bool = False, force: bool = False) -> None:
        """Upsert the batched train's summary comment (`_train_summary`); a failure to read or
        write it is a NOTE and the train goes on without it: it never decides anything."""
        if opening:
            from ._train_summary import TrainSummary

            self.summary = TrainSummary(self.port, self.repo, self.label, self.emit)
        if self.summary is None:
            return
        try:
            if opening:
                self.summary.open()
            self.summary.write(self.result, status, force=force or opening)
        except ForgeError as exc:
            self.summary = None
            self.emit(f"NOTE {self.repo}: no train summary ({exception_reason(exc)})")

    def _shape(self) -> str:
        """What the TRAIN line adds about the kind of train (nothing for the serial one)."""
        return ""

    def _ride(self, rows: Sequence[LabelledPr]) -> None:
        raise NotImplementedError

    def _guard(self, number: int, step: Callable[[], None]) -> bool:
        """Run one step of the train on PR `number`; return False once the train stopped."""
        try:
            step()
        except _Stop as stop:
            self._stopped(number, str(stop))
        except ForgeInputError as exc:
            self._drop_or_stop(number, "", f"cannot handle this PR: {exception_reason(exc)}")
        except ForgeError as exc:
            self._stopped(number, exception_reason(exc))
        if self.result.stopped is None:
            self._summarize("running")  # only when the step merged, dropped or saw a flake
        return self.result.stopped is None

    def _wait_ci(
        self,
        sha: str,
        rules: Sequence[RequiredContext],
        number: int,
        *,
        head: Callable[[], str] | None = None,
        latest: bool = False,
    ) -> CiWaitResult:
        """Wait for the required checks on `sha` (a PR's head, or a car with `number` 0)."""
        return ci_wait(
            self.port,
            self.repo,
            sha,
            rules=rules,
            timeout=self.timeout,
            interval=self.interval,
            sleep=self.sleep,
            clock=self.clock,
            # A required check that fails ends the wait at once; a push to the PR ends it too.
            # Checks register late after a push: pending during the grace, then `never
            # reported` (RED) rather than a wait for the whole timeout.
            fail_fast=True,
            grace=self.grace,
            head=head,
            on_poll=None if self.on_poll is None else lambda seen: self._polled(seen, number),
            latest=latest,
            grace_for=self.graces or None,
        )

    def _preflight(self, base: str, rules: Sequence[RequiredContext]) -> None:
        """Before the first car on `base`: its required checks will run on a car branch (else
        stop naming the fix), and each one's "never reported" grace (`_train_preflight`)."""
        from ._train_preflight import PreflightStop, preflight

        try:
            found = preflight(
                self.port,
                self.repo,
                base,
                rules,
                emit=self.emit,
                timeout=self.timeout,
                grace=self.grace if self.grace_given else None,
                default_grace=self.grace,
            )
        except PreflightStop as exc:
            raise _Stop(str(exc)) from None
        for name, grace in found.graces.items():
            self.graces[name] = max(grace, self.graces.get(name, 0.0))

    def _gate(self) -> _Gate:
        return _Gate(clone=self.clone, git=self.git, sleep=self.sleep, delays=self.delays)

    def _polled(self, seen: CiPoll, number: int) -> None:
        assert self.on_poll is not None  # only wired when given
        self.on_poll(replace(seen, pr=number))

    def _ref(self, number: int) -> str:
        return f"{self.repo}#{number}"

    def _stopped(self, number: int, why: str) -> None:
        self.result.stopped = number
        where = self._ref(number) if number else self.repo
        clone = f" --clone {shlex.quote(self.clone)}" if self.clone is not None else ""
        again = f"forge-cli train {self.repo} --label {shlex.quote(self.label)}{clone}"
        self.emit(f"STOPPED {where}: {why}; the PR keeps its label; rerun `{again}` to continue")

    def _closed(self, number: int) -> None:
        pr = self.port.get_pr(self.repo, number)
        ref = self._ref(number)
        if not pr.merged:
            if self.dry_run:
                self.emit(f"WOULD-UNLABEL {ref}: closed without merging")
                return
            self.port.remove_label(self.repo, number, self.label)
            self.emit(f"SKIPPED {ref}: closed without merging; label removed")
            return
        if self.dry_run:
            self.emit(f"WOULD-FINISH {ref}: merged at {pr.merge_sha}; delete its branch, unlabel")
            return
        # Merged by an earlier run that stopped before its cleanup (or by someone else).
        self._finish(pr, pr.head_sha, pr.merge_sha or "-", "skipped(merged)")

    def _finish(self, pr: PullRequest, head: str, sha: str, how: str) -> None:
        """Finish merged PR `pr`: delete its branch, remove the label, say MERGED."""
        branch = delete_head_branch(self.port, self.repo, pr)
        self._unlabel(pr.number, self.result.merged)
        self.emit(
            f"MERGED {self._ref(pr.number)} head={head} sha={sha} merge={how} branch={branch}"
        )

    def _still_labelled(self, number: int) -> bool:
        names = self.port.wire.list_issue_labels(self.repo, number)
        return self.label.casefold() in {n.casefold() for n in names}

    def _fetch(self, number: int) -> None:
        assert self.clone is not None
        if self.git is None:
            from ._git import exec_git

            self.git = exec_git
        base = self.port.wire.get_pr(self.repo, number).base_ref
        refspecs = [f"refs/heads/{base}", f"refs/pull/{number}/head"]
        try:
            done = self.git(
                ["fetch", "--quiet", "--no-tags", "origin", *refspecs],
                ExecOptions(cwd=self.clone, timeout=_FETCH_TIMEOUT),
            )
        except (ForgeError, OSError) as exc:
            raise _Stop(f"cannot fetch into {self.clone}: {exception_reason(exc)}") from None
        if done.returncode != 0:
            raise _Stop(f"git fetch in {self.clone} failed (exit {done.returncode})")

    def _drop_or_stop(self, number: int, head: str, blocker: str) -> None:
        ref = self._ref(number)
        if self.dry_run:
            self.emit(f"WOULD-DROP {ref}: {blocker}")
            return
        marker = train_marker(self.label, head or "-")
        at = f" at {head}" if head else ""
        body = (
            f"{marker}\n"
            f"forge-cli train took this PR out of the `{self.label}` train{at}:\n\n"
            f"> {blocker}\n\n"
            f"Fix that, then add the `{self.label}` label again to queue it."
        )
        try:
            self.port.upsert_comment(self.repo, number, marker, body)
            self._unlabel(number, self.result.dropped)
        except ForgeError as exc:
            self._stopped(number, f"cannot drop it ({blocker}): {exception_reason(exc)}")
            return
        self.emit(f"DROPPED {ref}: {blocker}")

    def _unlabel(self, number: int, into: list[int]) -> None:
        """Count PR `number` as merged or dropped (`into`), then remove its label.

        The summary comment is written in between: once the label is gone a rerun no longer
        lists the PR, so the summary must hold it first (a kill between the two only makes the
        rerun finish the PR and count it again, which the summary's union absorbs).
        """
        into.append(number)
        self._summarize("running")
        try:
            self.port.remove_label(self.repo, number, self.label)
        except BaseException:
            into.remove(number)
            raise
