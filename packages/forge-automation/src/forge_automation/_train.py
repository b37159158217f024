"""The local merge train behind `forge-cli train`: labelled PRs, oldest first, one at a time.

For each PR carrying the label: premerge (in the clone, fetched first, when one is given),
update-branch when the base is strict and the head is behind, then a wait for CI on the head,
then the guarded merge of `_merge`. A PR that cannot merge gets a comment naming its blocker
(`upsert_comment` with a marker holding the label and the head) and loses the label; the train
goes on with the next one. A merged PR loses the label once its branch is dealt with.

State lives on the forge, nowhere else: the label means "not finished yet". The train lists
labelled PRs in every state, so a rerun after a crash continues where the last run stopped:

- crashed before the merge: the PR is open and labelled, and its turn starts over; every write
  it already made is skipped (an update-branch already done leaves the head up to date, the CI
  wait sees the runs that came meanwhile, the comment's marker is already there);
- crashed inside update-branch's asynchronous window (the forge answered 202, the new head lands
  later): the rerun finds the old head, asks again (refused once the head moved, or answered
  202 again) and then sees the new head, which the walk below proves is the PR's own;
- crashed after the merge: the PR is merged and still labelled, so the rerun deletes its branch
  (if it is still there and still at the merged head) and removes the label;
- crashed after the comment of a drop: the rerun judges the PR again, finds the comment by its
  marker and removes the label.

No state file: a file would disagree with the forge as soon as someone else merges, pushes or
relabels, and the forge is what the next run has to act on anyway.

Only a PR at fault is dropped, and the comment names the fault: a red or never-reporting check,
a conflict, a push (a new head that is not the approved head with merges of the base on top), a
review or state blocker someone must act on, CI that never finished. Everything else keeps the
label:

- a head that moved is walked first (`forge_head_walk`): the approved head (the one the turn
  found) plus merges of the base is the PR's own (update-branch, ours or anyone's), and the
  turn goes on at it;
- the forge refusing the merge (405, e.g. "Base branch was modified") or an update-branch (422
  without a moved head), and a base that moved during the CI wait, start the turn's judgement
  again, at most `_ROUNDS` times; then the train stops;
- a forge read that fails, a clone that cannot be fetched, a mergeable state never computed stop
  the train with the PR still labelled and a STOPPED line naming the command to rerun.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ._ci_wait import CiPoll, check_wait_bounds, ci_wait
from ._errors import ForgeCliError, ForgeConflictError, ForgeError, ForgeInputError
from ._exec import ExecOptions, GitExec
from ._forge_walk import forge_head_walk
from ._merge import delete_head_branch, guarded_merge
from ._port import ForgePort
from ._premerge import UNKNOWN_REREAD_DELAYS, PremergeResult, premerge
from ._redact import redact_forge_secrets
from ._rules import load_required_contexts
from ._validate import validate_label, validate_repo

__all__ = ["TrainResult", "run_train", "train_marker"]

_FETCH_TIMEOUT = 300.0
# Seconds into a CI wait after which a required check with no run or status yet is RED ("never
# reported"): GitHub registers a workflow's runs (queued) and CI apps post a pending status within
# seconds of the push event, so five minutes without one means it will not come (a path filter, a
# renamed job, an app that is not installed); without a grace the train waited the whole timeout.
DEFAULT_TRAIN_GRACE = 300.0
# The longest pause between reads while waiting for update-branch's new head.
_HEAD_POLL = 2.0
# Premerge's reason for a mergeable state the forge has not computed yet, and how many rounds of
# premerge's re-reads the train gives it before it stops (the PR keeps its label).
_UNKNOWN = "mergeable_state still unknown"
_UNKNOWN_ROUNDS = 3
# Premerge reasons that say the train could not look, not that the PR cannot merge; and a base
# that requires no check, which is the repository's configuration, the same for every PR.
_NOT_THE_PRS_FAULT = ("cannot ", "the clone lacks ", "git ", _UNKNOWN, "no-required-checks")
# How many times one turn judges a PR again after the forge refused (a base that moves between
# premerge and merge, CI pending again); past that the train stops and the PR keeps its label.
_ROUNDS = 4
# Premerge reasons the train can clear: a strict base the head is behind, CI still running.
_CAN_PASS = ("strict base ", "CI is pending")


@dataclass(slots=True, kw_only=True)
class TrainResult:
    """What one run did: PRs merged (now or finished after a crash), dropped, and a stop."""

    repo: str
    label: str
    merged: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    # The PR the train stopped at; 0 when it stopped before any (the listing failed).
    stopped: int | None = None


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


def train_marker(label: str, head: str) -> str:
    """Return the marker of the train's comment on a PR dropped at `head`."""
    return f"<!-- forge-cli train: {label} {head} -->"


def _say(exc: BaseException) -> str:
    return redact_forge_secrets(str(exc))[:300] or type(exc).__name__


def run_train(
    port: ForgePort,
    repo: str,
    label: str,
    *,
    emit: Callable[[str], None],
    clone: str | None = None,
    dry_run: bool = False,
    timeout: float = 1800.0,
    interval: float = 15.0,
    grace: float = DEFAULT_TRAIN_GRACE,
    git: GitExec | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    delays: Sequence[float] = UNKNOWN_REREAD_DELAYS,
    on_poll: Callable[[CiPoll], None] | None = None,
) -> TrainResult:
    """Merge the PRs carrying `label`, oldest first, one at a time; print one line per step.

    `on_poll` sees each poll of each CI wait (`CiPoll`, with the PR's number in `pr`).
    `timeout` and `interval` bound each CI wait (and the wait for update-branch's new head).
    `grace` (seconds) is how long a CI wait treats a required check with no run yet as pending
    before it drops the PR (`<context>=never reported`).
    With `dry_run` nothing is written (not even the clone) and each line says what would happen.
    A repository the forge answers 404 for raises that ForgeCliError (status 404): there is no
    train to stop.
    """
    validate_repo(repo)
    validate_label(label)
    check_wait_bounds(timeout, interval, grace)
    train = _Train(
        port,
        repo,
        label,
        emit=emit,
        clone=clone,
        dry_run=dry_run,
        timeout=timeout,
        interval=interval,
        grace=grace,
        git=git,
        sleep=sleep,
        clock=clock,
        delays=delays,
        on_poll=on_poll,
    )
    return train.run()


class _Train:
    def __init__(
        self,
        port: ForgePort,
        repo: str,
        label: str,
        *,
        emit: Callable[[str], None],
        clone: str | None,
        dry_run: bool,
        timeout: float,
        interval: float,
        grace: float,
        git: GitExec | None,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        delays: Sequence[float],
        on_poll: Callable[[CiPoll], None] | None,
    ) -> None:
        self.port, self.repo, self.label, self.emit = port, repo, label, emit
        self.clone, self.dry_run = clone, dry_run
        self.timeout, self.interval, self.grace = timeout, interval, grace
        self.git, self.sleep, self.clock, self.delays = git, sleep, clock, delays
        self.on_poll = on_poll
        self.result = TrainResult(repo=repo, label=label)

    def _polled(self, seen: CiPoll, number: int) -> None:
        assert self.on_poll is not None  # only wired when given
        self.on_poll(replace(seen, pr=number))

    def run(self) -> TrainResult:
        try:
            rows = self.port.list_labelled_prs(self.repo, self.label, state="all")
        except ForgeInputError:
            raise
        except ForgeError as exc:
            if isinstance(exc, ForgeCliError) and exc.status == 404:
                raise  # no such repository (or none visible): no train to stop or rerun
            self._stopped(0, f"cannot list the PRs labelled {self.label}: {_say(exc)}")
            return self.result
        listed = ",".join(f"#{r.number}" for r in rows) or "none"
        mode = " (dry run: nothing is written)" if self.dry_run else ""
        self.emit(f"TRAIN {self.repo} label={self.label} prs={listed}{mode}")
        for row in rows:
            try:
                if row.state == "open":
                    self._turn(row.number)
                else:
                    self._closed(row.number)
            except _Stop as stop:
                self._stopped(row.number, str(stop))
                break
            except ForgeInputError as exc:
                self._drop_or_stop(row.number, "", f"cannot handle this PR: {_say(exc)}")
            except ForgeError as exc:
                self._stopped(row.number, _say(exc))
                break
            if self.result.stopped is not None:
                break
        if self.result.stopped is None:
            merged, dropped = len(self.result.merged), len(self.result.dropped)
            tail = " (dry run)" if self.dry_run else ""
            self.emit(f"DONE {self.repo} merged={merged} dropped={dropped}{tail}")
        return self.result

    # -- one PR ------------------------------------------------------------------------------------

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
        branch = delete_head_branch(self.port, self.repo, pr)
        self.port.remove_label(self.repo, number, self.label)
        self.result.merged.append(number)
        self.emit(
            f"MERGED {ref} head={pr.head_sha} sha={pr.merge_sha or '-'} merge=skipped(merged) "
            f"branch={branch}"
        )

    def _turn(self, number: int) -> None:
        ref = self._ref(number)
        if not self._still_labelled(number):
            self.emit(f"SKIPPED {ref}: the label was removed meanwhile")
            return
        pr = self.port.wire.get_pr(self.repo, number)
        if pr.merged or pr.state != "open":
            self._closed(number)  # merged or closed since the listing
            return
        # The label approves the head the turn finds; a later head is the PR's own only when it
        # is this one with merges of the base on top (an update-branch, ours or anyone's).
        approved = head = pr.head_sha
        try:
            for _ in range(_ROUNDS):
                try:
                    ready = self._prepare(number, pr.base_ref, head, approved)
                    if ready is not None:
                        self._merge(number, ready)
                    return
                except _Moved as moved:
                    head = self._own_head(number, pr.base_ref, approved, moved.head, moved.to)
                except _Again as again:
                    # The forge refused for a reason the next round judges afresh (a base that
                    # moved under the merge, an update-branch refused without a moved head).
                    fresh = self.port.wire.get_pr(self.repo, number)
                    if fresh.merged or fresh.state != "open":
                        self._closed(number)
                        return
                    if fresh.head_sha != head:
                        head = self._own_head(number, pr.base_ref, approved, head, fresh.head_sha)
                    self.emit(f"AGAIN {ref} {head}: {again}")
            raise _Stop(
                f"judged {_ROUNDS} times and the forge still refused (the base kept moving?)"
            )
        except _Drop as drop:
            self._drop_or_stop(number, drop.head, drop.blocker)

    def _still_labelled(self, number: int) -> bool:
        names = self.port.wire.list_issue_labels(self.repo, number)
        return self.label.casefold() in {n.casefold() for n in names}

    def _own_head(self, number: int, base: str, approved: str, head: str, new: str | None) -> str:
        """Return `new` when it is `approved` plus merges of the base; drop the PR when not."""
        if new is None:
            raise _Stop(f"the head moved from {head} and cannot be read")
        if new == head:
            return head
        walk = forge_head_walk(self.port, self.repo, base=base, head=new, approved_head=approved)
        if not walk.reachable:
            raise _Drop(
                f"a push to the PR: the head moved from {head} to {new}, which is not "
                f"{approved} with merges of {base} on top ({walk.detail})",
                head,
            )
        if not self.dry_run:
            self.emit(f"UPDATED {self._ref(number)} {head} -> {new}")
        return new

    def _premerge(self, number: int, head: str) -> PremergeResult:
        if self.clone is not None and not self.dry_run:
            self._fetch(number)
        # After each merge the forge recomputes every open PR's mergeability, lazily: a PR whose
        # state is still `unknown` after premerge's re-reads is judged again, never dropped.
        for _ in range(_UNKNOWN_ROUNDS):
            result = premerge(
                self.port,
                self.repo,
                number,
                head,
                approved_head=head,
                clone=self.clone,
                git=self.git,
                sleep=self.sleep,
                delays=self.delays,
            )
            if not (len(result.reasons) == 1 and result.reasons[0].startswith(_UNKNOWN)):
                break
        return result

    def _prepare(self, number: int, base: str, head: str, approved: str) -> str | None:
        """Premerge; update and wait for CI when only that blocks; return the head to merge.

        None in a dry run, after saying what would happen.
        """
        ref = self._ref(number)
        result = self._premerge(number, head)
        self._judge(result, head)
        if result.ok:
            if self.dry_run:
                self.emit(f"WOULD-MERGE {ref} head={head}")
                return None
            return head
        # Only a head behind a strict base and CI still running are left: both can pass.
        behind = result.strict and result.behind_by > 0
        if self.dry_run:
            if behind:
                self.emit(
                    f"WOULD-UPDATE {ref}: behind {result.base} by {result.behind_by} on a strict "
                    "base; then wait for CI and merge"
                )
            else:
                self.emit(f"WOULD-WAIT {ref} {head}: {'; '.join(result.reasons)}; then merge")
            return None
        if behind:
            head = self._update(number, base, head, approved)
        rules = load_required_contexts(self.port, self.repo, base)
        waited = ci_wait(
            self.port,
            self.repo,
            head,
            rules=rules.contexts,
            timeout=self.timeout,
            interval=self.interval,
            sleep=self.sleep,
            clock=self.clock,
            # A required check that fails ends the wait at once; a push to the PR ends it too.
            # After our own update-branch the new head's checks register late: pending during
            # the grace, then `never reported` (RED) rather than a wait for the whole timeout.
            fail_fast=True,
            grace=self.grace,
            head=lambda: self.port.wire.get_pr(self.repo, number).head_sha,
            on_poll=None if self.on_poll is None else lambda seen: self._polled(seen, number),
        )
        reasons = ", ".join(waited.reasons) or "-"
        word = {"green": "GREEN", "red": "RED", "timeout": "TIMEOUT", "moved": "MOVED"}
        self.emit(f"{word[waited.verdict]} {ref} {head} {reasons}")
        if waited.verdict == "moved":
            raise _Moved(head, waited.moved_to)
        if waited.verdict == "timeout":
            raise _Drop(f"CI did not finish within {self.timeout:g} s ({reasons})", head)
        if waited.verdict == "red":
            raise _Drop(f"CI is red: {reasons}", head)
        result = self._premerge(number, head)
        self._judge(result, head)
        if not result.ok:
            # Only a wait is left: the base moved during the CI wait (behind again on a strict
            # base), or CI pending again. Not the PR's fault: the next round updates again.
            raise _Again("; ".join(result.reasons))
        return head

    def _judge(self, result: PremergeResult, head: str) -> None:
        """Stop on a failed look, drop on a real blocker; return when OK or only waiting.

        A head that moved is not judged here: the turn walks it (`_own_head`) first.
        """
        if result.ok:
            return
        if result.head is not None and result.head != head:
            raise _Moved(head, result.head)
        if any(r.startswith(_NOT_THE_PRS_FAULT) for r in result.reasons):
            raise _Stop("; ".join(result.reasons))
        if not all(r.startswith(_CAN_PASS) for r in result.reasons):
            raise _Drop("; ".join(r for r in result.reasons if not r.startswith(_CAN_PASS)), head)

    def _update(self, number: int, base: str, head: str, approved: str) -> str:
        try:
            done = self.port.update_branch(self.repo, number, head_sha=head)
        except ForgeConflictError:
            # The head moved before our call (our own earlier update landing late, after a
            # rerun) or the PR was closed: the turn walks the new head or finishes the PR.
            raise _Again("update-branch found another head") from None
        except ForgeCliError as exc:
            if exc.status != 422:
                raise
            # A conflict, or nothing new on the base after all: premerge judges it again.
            raise _Again(f"update-branch refused: {_say(exc)}") from None
        if done.skipped == "merged":
            raise _Again("merged meanwhile")
        # The forge writes the new head asynchronously (202): read until it shows, within the
        # timeout. A rerun inside that window finds the old head, asks again (the forge keeps
        # one update per head) and waits here the same way.
        step = min(self.interval, _HEAD_POLL)
        for _ in range(int(self.timeout / step) + 2):
            fresh = self.port.get_pr(self.repo, number)
            if fresh.head_sha != head:
                return self._own_head(number, base, approved, head, fresh.head_sha)
            if not fresh.behind:
                return head  # nothing to merge in after all (someone else updated it first)
            self.sleep(step)
        raise _Stop(f"update-branch did not give a new head within {self.timeout:g} s")

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
            raise _Stop(f"cannot fetch into {self.clone}: {_say(exc)}") from None
        if done.returncode != 0:
            raise _Stop(f"git fetch in {self.clone} failed (exit {done.returncode})")

    def _merge(self, number: int, head: str) -> None:
        outcome = guarded_merge(
            self.port,
            self.repo,
            number,
            head,
            approved_head=head,
            clone=self.clone,
            git=self.git,
            sleep=self.sleep,
            delays=self.delays,
            checked=True,
        )
        if outcome.status == "moved":
            raise _Moved(head, outcome.head)
        if outcome.status == "failed":
            # With `checked` only the forge refuses here (405: the base moved under the merge,
            # or it sees a blocker premerge did not; 422): never proof the PR is at fault.
            raise _Again("; ".join(outcome.reasons))
        self.port.remove_label(self.repo, number, self.label)
        self.result.merged.append(number)
        self.emit(outcome.line())

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
            self.port.remove_label(self.repo, number, self.label)
        except ForgeError as exc:
            self._stopped(number, f"cannot drop it ({blocker}): {_say(exc)}")
            return
        self.result.dropped.append(number)
        self.emit(f"DROPPED {ref}: {blocker}")
