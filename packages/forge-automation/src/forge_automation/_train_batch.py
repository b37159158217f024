"""The batched train of `--batch N`: cars of N PRs tested together, merged when the car is green.

Each PR is judged first as the serial train judges it (premerge, the CI wait on its head; a PR
at fault is dropped with its comment); the next N that pass become a car (`_train_car`): the base
tip with their heads merged on in queue order, pushed to `train/<base>/<id>`, and the base's
required checks are waited for on the car's commit. Then:

- green, `land="push"`: the base is fast-forwarded to the car commit itself
  (git/update-ref, never forced), so the base only ever holds trees CI saw green; the forge
  marks each PR whose head the base now holds merged. Just before, each PR must still be open
  at the head the car holds (else the car is not landed and its PRs are judged again); a base
  that moved is refused by the forge (422) and the train stops, the PRs keeping their label. A
  refusal with the base unmoved (branch protection) stops too, the green car kept for the rerun.
- green (`land="merge"`): the PRs are merged through the forge in order, each guarded by its
  head (`guarded_merge` with the head sha as the forge's precondition). Before each merge the
  base must still be where the car expects it, and each merge must land on it (its parent);
  afterwards the base's tree must equal the car's tree. If not, the base moved under the train:
  it stops before the next merge and says so; what merged is what the car tested up to that
  point.
- red, one PR: the PR is dropped with a comment naming the failing checks (and, when the caller
  gives `explain`, each one's first failure line, as `ci-failures` reads it).
- red, more PRs: bisection. The first half is tested as a car of its own on the same base; when
  green it merges, and the second half on top of it is the red car's tree itself, already seen
  red: that half is split again without a new run (a single PR there is the culprit). When the
  first half is red, it is bisected the same way and the second half goes back to the queue.
  Each split halves the PRs, so the depth is at most log2(N).
- while a car from the queue is in CI, the next car's PRs are judged (`_look_ahead`); a red car
  puts them back behind its bisection's PRs; a stop while judging them deletes the car untested.
- checks that never reported on the car: the repository's CI does not run on `train/**`; the
  train stops naming the fix (no PR is at fault).

Everything the train knows lives on the forge: labels, and car branches whose names and commits
are a function of the base tip and the heads. A rerun after a crash builds the same car, finds its
branch (and the CI that ran on it) and does not test that tree again; PRs merged before the crash
are finished by the listing (merged and still labelled); nothing merges without a green car.
Car branches are deleted once their PRs are dealt with.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from ._ci_wait import CiWaitResult
from ._constants import ACTIONS_APP_ID
from ._errors import ForgeCliError
from ._merge import guarded_merge
from ._redact import exception_reason
from ._rules import load_required_contexts
from ._train_base import _WORD, _Stop
from ._train_car import Car, CarGit, CarGitError
from ._train_turn import _ROUNDS, _SerialTrain
from ._types import LabelledPr, PullRequest, RequiredContext

__all__ = ["BatchTrain"]

_NEVER = "never reported"


class _Halted(Exception):
    """The train stopped while judging the next car; its STOPPED line is written."""


_FAILED = frozenset({"failure", "timed_out", "startup_failure"})


@dataclass(kw_only=True)
class BatchTrain(_SerialTrain):
    """A train that tests cars of `batch` PRs (see the module docstring)."""

    cars: int = 0
    # How often the forge refused each PR's merge after a green car (bounded by _ROUNDS).
    _refused: Counter[int] = field(default_factory=Counter)
    # Each base's required checks, read once per run before its first car.
    _rules: dict[str, tuple[RequiredContext, ...]] = field(default_factory=dict)
    # Each red seen (check, first failure line) and the trees it stayed red on; and the ones
    # seen to pass on a rerun (flakes: never evidence against a tree).
    _reds: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    _flakes: set[tuple[str, str]] = field(default_factory=set)
    # The next car's PRs, judged while the car before it was in CI (None: not judged yet).
    _ahead: list[tuple[int, str, str]] | None = None
    # The bases of PRs finished after an earlier run (their car branches are swept too).
    _finished: set[str] = field(default_factory=set)

    def _shape(self) -> str:
        return f" batch={self.batch}"

    def _ride(self, rows: Sequence[LabelledPr]) -> None:
        queue: list[int] = []
        for row in rows:
            if row.state == "open":
                queue.append(row.number)
            elif not self._guard(row.number, partial(self._closed, row.number)):
                return
        if self.clone is None:
            self._stopped(0, "--batch needs --clone: cars are built with git in a clone")
            return
        carts = CarGit(self.clone, self.git)
        if not self._guard(0, partial(self._fill, queue)):
            return
        while (queue or self._ahead) and self.result.stopped is None:
            ready, self._ahead = self._ahead, None
            if ready is None:
                if not self._guard(queue[0], partial(self._check_first, queue[0])):
                    return
                ready = self._gather(queue)
            if not ready or not self._running():
                continue
            if self.dry_run:
                numbers = ",".join(f"#{n}" for n, _h, _b in ready)
                self.emit(f"WOULD-CAR {self.repo} {numbers}: build, test, merge when green")
                continue
            prs = [(n, h) for n, h, _b in ready]
            self._guard(ready[0][0], partial(self._car, carts, ready[0][2], prs, queue))
        if self._ahead:
            queue[:0] = [n for n, _h, _b in self._ahead]  # judged, never in a car: still queued
        if self._running() and not self.dry_run:
            for base in sorted({*self._rules, *self._finished}):
                self._guard(0, partial(carts.sweep, base))

    def _closed(self, number: int) -> None:
        """Finish a closed PR; remember its base, whose car branches a stopped run may have
        left (a kill after a car landed and before its branch was deleted)."""
        super()._closed(number)
        if not self.dry_run:
            self._finished.add(self.port.get_pr(self.repo, number).base_ref)

    def _fill(self, queue: list[int]) -> None:
        """Wait up to `max_wait` for a full first car: new labelled PRs join the queue."""
        deadline = self.clock() + self.max_wait
        while len(queue) < (self.batch or 1) and self.clock() < deadline and not self.dry_run:
            self.sleep(min(self.interval, max(deadline - self.clock(), 0.0)))
            rows = self.port.list_labelled_prs(self.repo, self.label, state="open")
            queue.extend(r.number for r in rows if r.number not in queue)

    def _running(self) -> bool:
        return self.result.stopped is None

    def _gather(self, queue: list[int]) -> list[tuple[int, str, str]]:
        """Judge PRs off the queue until `batch` of one base can merge; return them."""
        ready: list[tuple[int, str, str]] = []

        def take(number: int, head: str, base: str) -> None:
            ready.append((number, head, base))

        size = self.batch or 1
        while queue and len(ready) < size and self._running():
            number = queue[0]
            if ready and self.port.get_pr(self.repo, number).base_ref != ready[0][2]:
                break  # another base: its own car, after this one
            queue.pop(0)
            if not self._guard(number, partial(self._turn, number, take)):
                queue.insert(0, number)
        return ready

    def _check_first(self, number: int) -> None:
        """Check the rules of the base of PR `number` before any PR of its car is judged."""
        base = self.port.get_pr(self.repo, number).base_ref
        if base not in self._rules:
            self._check_base(base)

    def _check_base(self, base: str) -> None:
        rules = load_required_contexts(self.port, self.repo, base)
        if rules.strict:
            raise _Stop(
                f"{base} requires branches to be up to date before merging, so the forge refuses "
                "every PR of a car after the first; turn that rule off for "
                f"{base} (each car tests the PRs on the base tip), or run without --batch"
            )
        if not rules.contexts:
            raise _Stop(f"{base} requires no check, so no car can be proven green")
        self._preflight(base, rules.contexts)
        self._rules[base] = rules.contexts

    def _car(self, carts: CarGit, base: str, prs: list[tuple[int, str]], queue: list[int]) -> None:
        if base not in self._rules:
            self._check_base(base)
        try:
            tip = carts.fetch_base(base)
            forge_tip = self.port.get_head_sha(self.repo, base)
            if forge_tip != tip:
                raise _Stop(f"the clone fetched {base} at {tip}, the forge has it at {forge_tip}")
            self._settle(carts, base, tip, prs, queue, ahead=True)
        except CarGitError as exc:
            raise _Stop(str(exc)) from None
        except _Halted:
            pass  # the stop was said while judging the next car

    def _settle(
        self,
        carts: CarGit,
        base: str,
        tip: str,
        prs: list[tuple[int, str]],
        queue: list[int],
        *,
        red: tuple[Car, tuple[str, ...], bool] | None = None,
        ahead: bool = False,
    ) -> str | None:
        """Test `prs` as a car on `tip` and land or bisect it; return the base tip after, None
        when the train must build its next car from the queue (PRs went back to it).

        `red` is a car CI saw red (why, and whether the red survived a rerun): a car with its
        tree is not tested again. With `ahead` (a car from the queue, not a bisection's) the
        next car's PRs are judged while this car is in CI.
        """
        car = carts.build(base, tip, prs)
        queue[:0] = list(car.left_out)
        for number in car.left_out:
            self.emit(f"LATER {self._ref(number)}: conflicts with the car; it rides a later car")
        if not car.prs:
            return None
        if red is not None and red[0].tree == car.tree:
            (tested, reasons, confirmed), green = red, False
            self.emit(f"RED {car.numbers()}: the tree of {tested.branch}, seen red ({car.tree})")
        else:
            tested, green, reasons, confirmed = self._test(carts, car, queue if ahead else None)
        if green:
            return self._land(carts, tested, queue)
        carts.delete(tested)
        if len(car.prs) == 1:
            number, head = car.prs[0]
            self._drop_or_stop(number, head, self._blame(tested, reasons))
            return tip
        self._requeue_ahead(queue)  # the bisection's PRs come first, in queue order
        half = len(car.prs) // 2
        left, right = list(car.prs[:half]), list(car.prs[half:])
        self.emit(f"SPLIT {car.numbers()}: test {_numbers(left)} first, on {car.base_tip}")
        new_tip = self._settle(carts, base, tip, left, queue, red=None)
        if new_tip is None or not all(n in self.result.merged for n, _ in left):
            # A culprit was in the first half: the second goes back to the queue and fills
            # the next car (tested there, on the base as it is then).
            queue[:0] = [n for n, _ in right]
            return new_tip
        # The first half merged whole: the second on top of it is the red car's tree again.
        if not confirmed and len(right) == 1:
            # Without a rerun that failed again, a red may be a flake: the last PR is tested
            # on its own rather than blamed for the car's red.
            return self._settle(carts, base, new_tip, right, queue)
        return self._settle(carts, base, new_tip, right, queue, red=(tested, reasons, confirmed))

    def _requeue_ahead(self, queue: list[int]) -> None:
        """Put the PRs judged for the next car back at the queue's front (judged again later)."""
        if self._ahead:
            queue[:0] = [n for n, _h, _b in self._ahead]
        self._ahead = None

    def _look_ahead(self, queue: list[int]) -> None:
        """Judge the next car's PRs off the queue (while a car is in CI)."""
        if not queue or self._ahead is not None:
            return
        self._check_first(queue[0])
        self._ahead = self._gather(queue)

    def _test(
        self, carts: CarGit, car: Car, queue: list[int] | None = None
    ) -> tuple[Car, bool, tuple[str, ...], bool]:
        """Push the car (or find one pushed before with its tree) and wait for its checks; rerun
        failed ones up to `retry_flaky` times. Return the car CI ran on, green or not, the
        failing reasons, and whether a red survived a rerun (then it is no flake).

        Given the `queue`, the next car's PRs are judged while this one is in CI; when that
        stops the train, the car is deleted untested (`_Halted`)."""
        found = carts.same_tree(car)
        if found is None and not carts.push(car):
            found = car  # this very commit, pushed by an earlier run: its checks ran there
        if found is not None:
            car = found
            self.emit(f"CAR-FOUND {car.branch} {car.sha} prs={car.numbers()} tree={car.tree}")
        else:
            self.cars += 1
            self.emit(f"CAR {car.branch} {car.sha} prs={car.numbers()} base={car.base_tip}")
        if queue is not None:
            try:
                self._look_ahead(queue)
            except BaseException:
                carts.delete(car)
                raise
            if not self._running():
                carts.delete(car)
                raise _Halted
        waited = self._wait(car)
        failures = self._failures(car, waited)
        confirmed = self._reproduced(car, failures)
        for attempt in range(1, self.retry_flaky + 1):
            if waited.verdict != "red" or confirmed or not self._rerun(car, attempt):
                break
            before, waited = waited, self._wait(car, latest=True)
            confirmed = waited.verdict != "green"
            if not confirmed:
                names = ", ".join(before.reasons)
                self._flakes.update(failures)
                self.result.flaky.append(f"{car.branch} {names}")
                self.emit(f"FLAKY {car.branch} {names}: failed, then passed on the same tree")
        if waited.verdict == "red":
            for key in failures:
                self._reds.setdefault(key, set()).add(car.tree)
        reasons = ", ".join(waited.reasons) or "-"
        if waited.reasons and all(r.endswith(_NEVER) for r in waited.reasons):
            carts.delete(car)
            raise _Stop(
                f"the required checks never reported on {car.branch} ({reasons}): make the CI "
                "run on pushes to train/** (for GitHub Actions: on: push: branches: ['train/**'])"
            )
        if waited.verdict == "timeout":
            carts.delete(car)
            raise _Stop(f"CI did not finish on {car.branch} within {self.timeout:g} s ({reasons})")
        return car, waited.verdict == "green", tuple(waited.reasons), confirmed

    def _failures(self, car: Car, waited: CiWaitResult) -> list[tuple[str, str]]:
        """Each failed check of a red car with its first failure line (the ones that have one)."""
        if waited.verdict != "red" or self.explain is None:
            return []
        found = []
        for reason in waited.reasons:
            check, _, conclusion = reason.partition("=")
            if conclusion not in _FAILED:
                continue
            line = self.explain(self.repo, car.sha, check)
            if line:
                found.append((check, line))
        return found

    def _reproduced(self, car: Car, failures: list[tuple[str, str]]) -> bool:
        """Whether a failure of this car already stayed red on another tree (never a flake's):
        the same failure on two trees is no flake, as a failed rerun shows on one."""
        for key in failures:
            if key not in self._flakes and self._reds.get(key, set()) - {car.tree}:
                self.emit(
                    f"KNOWN {car.branch} {key[0]}: the same failure stayed red on another tree "
                    f"({key[1]}); no rerun"
                )
                return True
        return False

    def _wait(self, car: Car, *, latest: bool = False) -> CiWaitResult:
        waited = self._wait_ci(car.sha, self._rules[car.base], 0, latest=latest)
        self.emit(f"{_WORD[waited.verdict]} {car.branch} {', '.join(waited.reasons) or '-'}")
        return waited

    def _rerun(self, car: Car, attempt: int) -> bool:
        """Rerun the car's failed Actions jobs; False when there is none to rerun."""
        failed = [
            r
            for r in self.port.latest_check_runs(self.repo, car.sha)
            if r.conclusion in _FAILED and r.app_id == ACTIONS_APP_ID
        ]
        if not failed:
            return False
        for run in failed:
            self.port.rerun_job(self.repo, run.id)
        names = ",".join(sorted({r.name for r in failed}))
        self.emit(f"RERUN {car.branch} {names}: attempt {attempt} of {self.retry_flaky}")
        # The forge registers a rerun's new run a moment later: until it shows, the old failed
        # run is still the latest and the wait would read it again.
        old = {r.id for r in failed}
        deadline = self.clock() + self.grace
        while self.clock() < deadline:
            latest = self.port.latest_check_runs(self.repo, car.sha)
            if not old & {r.id for r in latest}:
                break
            self.sleep(self.interval)
        return True

    def _blame(self, car: Car, reasons: tuple[str, ...]) -> str:
        """Name the red car (the commit CI ran on), each failing check and its first failure."""
        lines = [
            f"CI is red on {car.branch} ({car.sha}: {car.numbers()} on {car.base} {car.base_tip})"
        ]
        for reason in reasons:
            check = reason.split("=", 1)[0]
            first = None if self.explain is None else self.explain(self.repo, car.sha, check)
            lines.append(f"{reason}: {first}" if first else reason)
        return ": ".join(lines[:1]) + ": " + "; ".join(lines[1:])

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
                self._requeue_ahead(queue)
                rest = [n for n, _ in car.prs[index:]]
                queue[:0] = rest
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
            self._requeue_ahead(queue)
            queue[:0] = [n for n, _ in car.prs]
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


def _numbers(prs: list[tuple[int, str]]) -> str:
    return ",".join(f"#{n}" for n, _ in prs)
