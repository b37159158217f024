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
  Each split halves the PRs, so the depth is at most log2(N). When more than one car may be in
  CI (`_cap()`), the bisection's next step rides on the first half while it is in CI (the first
  half of the second half, and so on: `_bisection_plans`), so that a green first half finds it
  tested; a red one discards it.
- while a car from the queue is in CI, the next car's PRs are judged (`_look_ahead`); a red car
  puts them back behind its bisection's PRs, keeping their judgment (`_judged`: the head they
  ride at, which their landing checks again); a stop while judging them deletes the car untested.
- `speculate` K: the next K cars' PRs are judged and each car is built on the commit of the one
  before and pushed at once (`_stack`), so their CI runs beside the car's. When the car lands,
  the next one built on the base is that very commit (`land="push"`) or a car with that tree
  (`land="merge"`, found by `CarGit.same_tree`): it lands on its result without another run.
  When the car is red, the cars on it are deleted unlanded (`_discard`); the same failure on the
  first of them shows the red is no flake (`_seen_above`). `max_cars` caps the cars in CI.
- checks that never reported on the car: the repository's CI does not run on `train/**`; the
  train stops naming the fix (no PR is at fault).

Everything the train knows lives on the forge: labels, and car branches whose names and commits
are a function of the parent commit (the base tip, or the car below) and the heads. A rerun
after a crash builds the same car, finds its branch (and the CI that ran on it) and does not
test that tree again; PRs merged before the crash are finished by the listing (merged and still
labelled); nothing merges without a green car.
Car branches are deleted once their PRs are dealt with. With cars on cars: a car lands only
after its own green wait, on the base tip it was built on (`land="push"`: a fast-forward the
forge checks; a car found by its tree must descend from the tip); a killed run's speculative
cars are found by the rerun (same parent, same heads, same commit) with their CI, never pushed
over; one whose parent never lands is never landed and is swept with the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from ._ci_wait import CiWaitResult
from ._constants import ACTIONS_APP_ID
from ._rules import load_required_contexts
from ._train_base import _WORD, _Stop
from ._train_car import Car, CarGit, CarGitError
from ._train_land import LandingTrain
from ._types import LabelledPr, RequiredContext

__all__ = ["BatchTrain"]

_NEVER = "never reported"
# How many cars' PRs past the usual a bisection's cars judge ahead while they are in CI.
_BISECTION_AHEAD = 2


class _Halted(Exception):
    """The train stopped while judging the next car; its STOPPED line is written."""


_FAILED = frozenset({"failure", "timed_out", "startup_failure"})


@dataclass(kw_only=True)
class BatchTrain(LandingTrain):
    """A train that tests cars of `batch` PRs (see the module docstring)."""

    cars: int = 0
    # Each base's required checks, read once per run before its first car.
    _rules: dict[str, tuple[RequiredContext, ...]] = field(default_factory=dict)
    # Each red seen (check, first failure line) and the trees it stayed red on; and the ones
    # seen to pass on a rerun (flakes: never evidence against a tree).
    _reds: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    _flakes: set[tuple[str, str]] = field(default_factory=set)
    # The next cars' PRs, judged while the car before them was in CI, in queue order.
    _ahead: list[list[tuple[int, str, str]]] = field(default_factory=list)
    # Speculative cars in CI: the first on the car being tested, each next one on the one before.
    _stacked: list[Car] = field(default_factory=list)
    _carts: CarGit | None = None
    # PRs a red car sent back to the queue, judged in this run: number -> (head, base).
    _judged: dict[int, tuple[str, str]] = field(default_factory=dict)
    # Each PR's place in the queue (the listing's order): PRs go back to it by their place.
    _rank: dict[int, int] = field(default_factory=dict)
    # The bases of PRs finished after an earlier run (their car branches are swept too).
    _finished: set[str] = field(default_factory=set)

    def _shape(self) -> str:
        shape = f" batch={self.batch}"
        if self.speculate:
            shape += f" speculate={self.speculate}"
        return shape + ("" if self.max_cars is None else f" max-cars={self.max_cars}")

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
        carts = self._carts = CarGit(self.clone, self.git)
        self._rank.update((n, place) for place, n in enumerate(queue))
        if not self._guard(0, partial(self._fill, queue)):
            return
        while (queue or self._ahead) and self.result.stopped is None:
            first = self._ahead[0][0][0] if self._ahead else None
            if first is not None and queue and self._rank[queue[0]] < self._rank[first]:
                self._requeue_ahead(queue)  # PRs a bisection put back come first
            if self._ahead:
                ready = self._ahead.pop(0)
            else:
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
            for row in rows:
                if row.number not in queue:
                    self._rank.setdefault(row.number, len(self._rank))
                    queue.append(row.number)

    def _running(self) -> bool:
        return self.result.stopped is None

    def _gather(self, queue: list[int]) -> list[tuple[int, str, str]]:
        """Judge PRs off the queue until `batch` of one base can merge; return them. A PR a red
        car sent back keeps its judgment (`_judged`): it rides at the head it was judged at,
        which its landing checks again."""
        ready: list[tuple[int, str, str]] = []

        def take(number: int, head: str, base: str) -> None:
            ready.append((number, head, base))

        size = self.batch or 1
        while queue and len(ready) < size and self._running():
            number = queue[0]
            judged = self._judged.get(number)
            base = judged[1] if judged else None
            if ready and (base or self.port.get_pr(self.repo, number).base_ref) != ready[0][2]:
                break  # another base: its own car, after this one
            queue.pop(0)
            if judged is not None:
                del self._judged[number]
                take(number, *judged)
            elif not self._guard(number, partial(self._turn, number, take)):
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
        plans: Sequence[Sequence[tuple[int, str]]] = (),
    ) -> str | None:
        """Test `prs` as a car on `tip` and land or bisect it; return the base tip after, None
        when the train must build its next car from the queue (PRs went back to it).

        `red` is a car CI saw red (why, and whether the red survived a rerun): a car with its
        tree is not tested again. With `ahead` (a car from the queue, not a bisection's) the
        next car's PRs are judged while this car is in CI (and with `speculate`, the next cars
        ride on it); else `plans` are the PRs of the speculative cars a bisection stacks on it.
        """
        car = carts.build(base, tip, prs)
        self._requeue(queue, car.left_out)
        for number in car.left_out:
            self.emit(f"LATER {self._ref(number)}: conflicts with the car; it rides a later car")
        if not car.prs:
            return None
        if red is not None and red[0].tree == car.tree:
            (tested, reasons, confirmed), green = red, False
            self.emit(f"RED {car.numbers()}: the tree of {tested.branch}, seen red ({car.tree})")
        else:
            tested, green, reasons, confirmed = self._test(carts, car, queue, plans, ahead=ahead)
        if green:
            return self._land(carts, tested, queue)
        carts.delete(tested)
        if self._stacked and self._stacked[0].base_tip == tested.sha:
            self._discard(f"it rides on {tested.branch}, which is red")
        if len(car.prs) == 1:
            number, head = car.prs[0]
            self._drop_or_stop(number, head, self._blame(tested, reasons))
            return tip
        half = len(car.prs) // 2
        left, right = list(car.prs[:half]), list(car.prs[half:])
        self.emit(f"SPLIT {car.numbers()}: test {_numbers(left)} first, on {car.base_tip}")
        new_tip = self._settle(carts, base, tip, left, queue, plans=_bisection_plans(right))
        if new_tip is None or not all(n in self.result.merged for n, _ in left):
            # A culprit was in the first half: the second goes back to the queue and fills
            # the next car (tested there, on the base as it is then).
            self._requeue(queue, [n for n, _ in right])
            self._judged.update((n, (h, base)) for n, h in right)
            return new_tip
        # The first half merged whole: the second on top of it is the red car's tree again.
        if not confirmed and len(right) == 1:
            # Without a rerun that failed again, a red may be a flake: the last PR is tested
            # on its own rather than blamed for the car's red.
            return self._settle(carts, base, new_tip, right, queue)
        return self._settle(carts, base, new_tip, right, queue, red=(tested, reasons, confirmed))

    def _requeue(self, queue: list[int], numbers: Sequence[int]) -> None:
        """Put PRs back in the queue, each at its place (the queue stays in listing order)."""
        queue[:] = sorted({*queue, *numbers}, key=lambda n: self._rank.get(n, -1))

    def _requeue_ahead(self, queue: list[int]) -> None:
        """Put the PRs judged for the next cars back in the queue, keeping their judgment (the
        cars riding with them are discarded when the next car is not the one below them)."""
        self._requeue(queue, [n for ready in self._ahead for n, _h, _b in ready])
        self._judged.update((n, (h, b)) for ready in self._ahead for n, h, b in ready)
        self._ahead = []

    def _ride_ahead(self, carts: CarGit, car: Car) -> None:
        """Stack the judged cars on `car` (`speculate` of them, of its base)."""
        plans = []
        for ready in self._ahead[: self.speculate]:
            if ready[0][2] != car.base:
                break  # another base: its cars start on that base's tip
            plans.append([(n, h) for n, h, _b in ready])
        self._stack(carts, car, plans)

    def _look_ahead(
        self, queue: list[int], judged: Callable[[], None] | None = None, *, more: bool = False
    ) -> None:
        """Judge the next cars' PRs off the queue (while a car is in CI): the next car's, and
        with `speculate` K the next K + 1 cars' (K ride on this one; the one after is ready to
        ride on them as soon as this car lands). With `more` (a bisection's car in CI) one
        car's more, at most two past that."""
        want = self.speculate + 1 if self.speculate else 1
        if more:
            want = min(len(self._ahead) + 1, want + _BISECTION_AHEAD)
        while queue and len(self._ahead) < want and self._running():
            self._check_first(queue[0])
            ready = self._gather(queue)
            if ready:
                self._ahead.append(ready)
                if judged is not None:
                    judged()

    def _cap(self) -> int:
        """The most cars in CI at once (`max_cars`; else the car and its `speculate` cars)."""
        return 1 + self.speculate if self.max_cars is None else self.max_cars

    def _stack(self, carts: CarGit, car: Car, plans: Sequence[Sequence[tuple[int, str]]]) -> None:
        """Keep or push the speculative cars on `car`: the first holds `plans[0]` on the car's
        commit, each next one the next plan on the one before, within `_cap()` cars in CI.
        A car already stacked with the same parent and PRs stays; the rest are discarded."""
        parent, kept = car, 0
        for prs in plans:
            if kept == len(self._stacked):
                break
            here = self._stacked[kept]
            if here.base_tip != parent.sha or list(here.prs) != list(prs):
                break
            parent, kept = here, kept + 1
        self._discard("the cars before it changed", keep=kept)
        for prs in plans[kept:]:
            if 1 + len(self._stacked) >= self._cap():
                break
            spec = carts.build(car.base, parent.sha, prs)
            if spec.left_out or not spec.prs:
                break  # a conflict: the car is built on the base when its turn comes
            word = "SPECULATE" if carts.push(spec) else "SPECULATE-FOUND"
            self.cars += word == "SPECULATE"
            self.emit(f"{word} {spec.branch} {spec.sha} prs={spec.numbers()} on={parent.branch}")
            self._stacked.append(spec)
            parent = spec

    def _discard(self, why: str, *, keep: int = 0) -> None:
        """Delete the speculative cars past the first `keep` (never landed: their PRs are
        judged again, or ride the cars their bisection builds)."""
        if self._carts is None:
            return
        gone, self._stacked = self._stacked[keep:], self._stacked[:keep]
        for spec in reversed(gone):
            self._carts.delete(spec)
            self.emit(f"DISCARD {spec.branch} prs={spec.numbers()}: {why}")

    def _test(
        self,
        carts: CarGit,
        car: Car,
        queue: list[int],
        plans: Sequence[Sequence[tuple[int, str]]] = (),
        *,
        ahead: bool = False,
    ) -> tuple[Car, bool, tuple[str, ...], bool]:
        """Push the car (or find one pushed before with its tree) and wait for its checks; rerun
        failed ones up to `retry_flaky` times. Return the car CI ran on, green or not, the
        failing reasons, and whether a red survived a rerun (then it is no flake).

        Given the `queue`, the next car's PRs are judged while this one is in CI; when that
        stops the train, the car is deleted untested (`_Halted`). Before the wait, the next
        cars' PRs (`plans`, or the ones judged ahead with `speculate`) ride on this car as
        speculative cars (`_stack`); a red that a car on it shows again is no flake."""
        found: Car | None = car
        if carts.remote_sha(car.branch) != car.sha:  # else: this very commit, pushed before
            found = carts.same_tree(car, descends=self.land == "push")
            if found is None and not carts.push(car):
                found = car  # pushed by an earlier run meanwhile: its checks ran there
        if found is not None:
            car = found
            self.emit(f"CAR-FOUND {car.branch} {car.sha} prs={car.numbers()} tree={car.tree}")
        else:
            self.cars += 1
            self.emit(f"CAR {car.branch} {car.sha} prs={car.numbers()} base={car.base_tip}")
        if self._stacked and self._stacked[0].sha == car.sha:
            self._stacked.pop(0)  # this car was speculative: its CI started on the car before
        else:
            self._discard(f"it does not ride on {car.branch}")
        # The cars judged before ride on this one at once (or the bisection's next steps), each
        # next one once judged; the next cars' PRs are judged while this one is in CI.
        ride = partial(self._ride_ahead, carts, car) if ahead else None
        if ride is None:
            self._stack(carts, car, plans)
        else:
            ride()
        try:
            self._look_ahead(queue, ride, more=not ahead)
        except BaseException:
            carts.delete(car)
            raise
        if not self._running():
            carts.delete(car)
            self._discard("the train stopped")
            raise _Halted
        waited = self._wait(car)
        failures = self._failures(car, waited)
        confirmed = self._reproduced(car, failures)
        if failures and not confirmed and self._stacked:
            confirmed = self._seen_above(car, failures)
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

    def _seen_above(self, car: Car, failures: list[tuple[str, str]]) -> bool:
        """Whether the speculative car riding on red `car` (its tree and more) failed the same
        way: then the red is no flake and needs no rerun (the car above is discarded after)."""
        above = self._stacked[0]
        waited = self._wait(above)
        for key in self._failures(above, waited):
            self._reds.setdefault(key, set()).add(above.tree)
        return self._reproduced(car, failures)

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


def _numbers(prs: list[tuple[int, str]]) -> str:
    return ",".join(f"#{n}" for n, _ in prs)


def _bisection_plans(right: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """The speculative cars a bisection stacks on its first half while that is in CI: on a
    green first half the second is the red car's tree (seen red), so its own first half is
    tested next, and so on down: each plan is the first half of what is left after the one
    before (`_cap()` bounds how many ride at once)."""
    plans = []
    while len(right) > 1:
        half = len(right) // 2
        plans.append(right[:half])
        right = right[half:]
    return plans
