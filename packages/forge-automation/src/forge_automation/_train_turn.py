"""The serial train: one labelled PR at a time, oldest first (`_train`'s docstring tells the
whole story: what is dropped, what is judged again, what stops the train).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from ._errors import ForgeCliError, ForgeConflictError
from ._forge_walk import forge_head_walk
from ._merge import guarded_merge
from ._premerge import PremergeResult, premerge
from ._redact import exception_reason
from ._rules import load_required_contexts
from ._train_base import _WORD, _Again, _Drop, _Moved, _Stop, _Train
from ._types import LabelledPr

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


class _SerialTrain(_Train):
    """The train of `--batch 1`: premerge, update, CI wait and merge of each PR in turn."""

    def _ride(self, rows: Sequence[LabelledPr]) -> None:
        for row in rows:
            if not self._guard(row.number, partial(self._step, row)):
                break

    def _step(self, row: LabelledPr) -> None:
        if row.state == "open":
            self._turn(row.number)
        else:
            self._closed(row.number)

    # -- one PR ------------------------------------------------------------------------------------

    def _turn(self, number: int, ready: Callable[[int, str, str], None] | None = None) -> None:
        """Judge PR `number` until it can merge, then `ready(number, head, base)` (the merge).

        Without `ready` the turn merges (the serial train); the batched train collects instead.
        """
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
                    good = self._prepare(number, pr.base_ref, head, approved)
                    if good is not None:
                        if ready is None:
                            self._merge(number, good)
                        else:
                            ready(number, good, pr.base_ref)
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
                self.port, self.repo, number, head, approved_head=head, **self._gate()
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
        waited = self._wait_ci(
            head,
            rules.contexts,
            number,
            head=lambda: self.port.wire.get_pr(self.repo, number).head_sha,
        )
        reasons = ", ".join(waited.reasons) or "-"
        self.emit(f"{_WORD[waited.verdict]} {ref} {head} {reasons}")
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
            raise _Again(f"update-branch refused: {exception_reason(exc)}") from None
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

    def _merge(self, number: int, head: str) -> None:
        gate = self._gate()
        outcome = guarded_merge(
            self.port, self.repo, number, head, approved_head=head, checked=True, **gate
        )
        if outcome.status == "moved":
            raise _Moved(head, outcome.head)
        if outcome.status == "failed":
            # With `checked` only the forge refuses here (405: the base moved under the merge,
            # or it sees a blocker premerge did not; 422): never proof the PR is at fault.
            raise _Again("; ".join(outcome.reasons))
        self._unlabel(number, self.result.merged)
        self.emit(outcome.line())
