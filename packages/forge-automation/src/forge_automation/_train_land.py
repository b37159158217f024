"""How the batched train lands a green car (`_train_batch`'s docstring tells when): merged PR by
PR through the forge (`land="merge"`), or the base fast-forwarded to the car commit itself
(`land="push"`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._errors import ForgeCliError
from ._merge import guarded_merge
from ._redact import exception_reason
from ._train_base import _Stop
from ._train_car import Car, CarGit
from ._train_turn import _ROUNDS, _SerialTrain
from ._types import PullRequest

__all__ = ["LandingTrain"]


@dataclass(kw_only=True)
class LandingTrain(_SerialTrain):
    """The landing of green cars; `BatchTrain` builds and tests them."""

    # How often the forge refused each PR's merge after a green car (bounded by _ROUNDS).
    _refused: Counter[int] = field(default_factory=Counter)

    def _requeue(self, queue: list[int], numbers: Sequence[int]) -> None:
        """Put PRs back in the queue at their places, to be judged again (`BatchTrain`)."""
        raise NotImplementedError

    def _land(self, carts: CarGit, car: Car, queue: list[int]) -> str | None:
        """Merge the car's PRs in order on the tip it was tested on; check the tree after."""
        if self.land == "push":
            return self._push(carts, car, queue)
        expected = car.base_tip
        for index, (number, head) in enumerate(car.prs):
            now = self.port.get_head_sha(self.repo, car.base)
            if now != expected:
                raise _Stop(
                    f"{car.base} moved to {now} while {car.branch} was merging (expected "
                    f"{expected}): what merged so far is what the car tested"
                )
            outcome = guarded_merge(
                self.port, self.repo, number, head, approved_head=head, checked=True, **self._gate()
            )
            if outcome.status != "merged":
                self._refused[number] += 1
                if self._refused[number] > _ROUNDS:
                    raise _Stop(f"the forge refused #{number}'s merge {_ROUNDS} times")
                self._requeue(queue, [n for n, _ in car.prs[index:]])
                self.emit(
                    f"AGAIN {self._ref(number)} {head}: {outcome.status}: "
                    f"{'; '.join(outcome.reasons) or outcome.head}; back to the queue"
                )
                carts.delete(car)
                return None
            self._unlabel(number, self.result.merged)
            self.emit(outcome.line())
            parents = self.port.commit_parents(self.repo, outcome.sha or "")
            if not parents or parents[0] != expected:
                raise _Stop(
                    f"the merge of #{number} landed on {parents[0] if parents else '-'}, not on "
                    f"{expected}: {car.base} moved under the train"
                )
            expected = outcome.sha or ""
        tip = carts.fetch_base(car.base)
        tree = carts.tree(tip)
        if tip != expected or tree != car.tree:
            raise _Stop(
                f"{car.base} is at {tip} with tree {tree}, not the tested car's tree {car.tree}"
            )
        self.emit(f"LANDED {car.branch} {car.base}={tip} tree={tree}")
        carts.delete(car)
        return tip

    def _push(self, carts: CarGit, car: Car, queue: list[int]) -> str | None:
        """Fast-forward the base to the tested car commit (`--land push`); the forge marks the
        car's PRs merged. Each PR must still be at the head the car holds (else the car is
        rebuilt, never landed); a base that is no longer the car's parent gets a 422: stop, the
        car deleted. A 422 with the base unmoved (branch protection refusing the push) stops
        with the green car kept: the rerun's car is the same commit, found with its checks."""
        for number, head in car.prs:
            pr = self.port.get_pr(self.repo, number)
            if pr.head_sha == head and pr.state == "open":
                continue
            self._refused[number] += 1
            if self._refused[number] > _ROUNDS:
                raise _Stop(f"#{number} changed under {_ROUNDS} green cars in a row")
            self._requeue(queue, [n for n, _ in car.prs])
            carts.delete(car)
            self.emit(
                f"AGAIN {self._ref(number)} {head}: now {pr.state} at {pr.head_sha}, not the head "
                f"{car.branch} holds; the car is not landed, its PRs go back to the queue"
            )
            return None
        try:
            self.port.wire.update_ref(self.repo, car.base, car.sha)
        except ForgeCliError as exc:
            if exc.status != 422:
                raise
            now = self.port.get_head_sha(self.repo, car.base)
            if now != car.base_tip:
                carts.delete(car)  # its parent is gone: a rerun builds on the new tip
                raise _Stop(
                    f"{car.base} moved to {now}, so it is no longer the parent {car.base_tip} of "
                    f"{car.branch} ({car.sha}): the fast-forward was refused (422) and nothing "
                    "of the car landed"
                ) from None
            # The base is unmoved, so the green car is still the next landing: it stays, and a
            # rerun (once the refusal is fixed) finds it with its checks and lands it untested.
            raise _Stop(
                f"the forge refused ({exception_reason(exc)}) to move {car.base} to {car.branch} "
                f"({car.sha}): the fast-forward was refused (422) and nothing of the car landed; "
                "the green car is kept, a rerun lands it without testing it again"
            ) from None
        self.emit(f"PUSHED {car.base}={car.sha} from {car.branch} prs={car.numbers()}")
        # The car branch goes while its PRs are still labelled: a run killed before this finds
        # them merged and labelled, finishes them and sweeps their base's car branches.
        carts.delete(car)
        for number, head in car.prs:
            pr = self._marked_merged(number, head)
            self._finish(pr, head, pr.merge_sha or car.sha, "push")
        tip = carts.fetch_base(car.base)
        tree = carts.tree(tip)
        if tip != car.sha or tree != car.tree:
            raise _Stop(
                f"{car.base} is at {tip} with tree {tree}, not the tested car {car.sha} "
                f"({car.tree})"
            )
        self.emit(f"LANDED {car.branch} {car.base}={tip} tree={tree}")
        return tip

    def _marked_merged(self, number: int, head: str) -> PullRequest:
        """Read PR `number` until the forge marks it merged (within the grace), after the push
        landed its `head`."""
        deadline = self.clock() + self.grace
        while True:
            pr = self.port.get_pr(self.repo, number)
            if pr.merged or pr.head_sha != head or self.clock() >= deadline:
                break
            self.sleep(self.interval)
        if pr.merged:
            return pr
        if pr.head_sha != head:
            # A push to the PR between the head check and the ref update: its tested head
            # landed with the car, its new commits did not (the forge keeps it open).
            raise _Stop(
                f"#{number} was pushed to ({pr.head_sha}) while its car landed: the car's {head} "
                "is on the base, the new commits are not, and the PR stays open with its label"
            )
        raise _Stop(
            f"#{number}'s head is on the base, but the forge has not marked it merged within "
            f"{self.grace:g} s"
        )
