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
  the train with the PR still labelled and a STOPPED line naming the command to rerun.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ._ci_wait import CiPoll, check_wait_bounds
from ._errors import ForgeInputError
from ._exec import GitExec
from ._port import ForgePort
from ._premerge import UNKNOWN_REREAD_DELAYS
from ._validate import validate_label, validate_repo

__all__ = ["LAND_MODES", "TrainResult", "run_train", "train_marker"]

# Seconds into a CI wait after which a required check with no run or status yet is RED ("never
# reported"): GitHub registers a workflow's runs (queued) and CI apps post a pending status within
# seconds of the push event, so five minutes without one means it will not come (a path filter, a
# renamed job, an app that is not installed); without a grace the train waited the whole timeout.
DEFAULT_TRAIN_GRACE = 300.0
# The most PRs one car holds (GitHub's merge queue allows groups of 1 to 100).
MAX_BATCH = 100
# The most reruns of a red car's failed checks before it is bisected.
MAX_RETRIES = 5
# The most cars that ride speculatively on the car in CI (`speculate`), and the most cars in CI
# at once (`max_cars`): each bounds how deep cars stack on cars.
MAX_SPECULATE = 8
MAX_CARS = 16
# How a green car lands: `merge` (each PR through the forge's merge, in order) or `push` (the
# base fast-forwarded to the tested car commit itself; the forge marks the PRs merged).
LAND_MODES = ("merge", "push")


@dataclass(slots=True, kw_only=True)
class TrainResult:
    """What one run did: PRs merged (now or finished after a crash), dropped, and a stop."""

    repo: str
    label: str
    merged: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    # The PR the train stopped at; 0 when it stopped before any (the listing failed).
    stopped: int | None = None
    # Checks that failed on a car and passed when rerun on the same tree (`<car> <check>=...`).
    flaky: list[str] = field(default_factory=list)


def train_marker(label: str, head: str) -> str:
    """Return the marker of the train's comment on a PR dropped at `head`."""
    return f"<!-- forge-cli train: {label} {head} -->"


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
    grace: float | None = None,
    git: GitExec | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    delays: Sequence[float] = UNKNOWN_REREAD_DELAYS,
    on_poll: Callable[[CiPoll], None] | None = None,
    batch: int | None = None,
    max_wait: float = 0.0,
    retry_flaky: int = 0,
    explain: Callable[[str, str, str], str | None] | None = None,
    land: str = "merge",
    speculate: int = 0,
    max_cars: int | None = None,
) -> TrainResult:
    """Merge the PRs carrying `label`, oldest first; print one line per step.

    Without `batch` one PR at a time (update, CI wait, merge). With `batch` (1 to 100) the PRs
    ride cars of that many: the base tip with their heads merged on, built in `clone` (required),
    pushed to `train/<base>/<id>`, merged when the car's required checks pass and bisected when
    they fail (`_train_batch`). `max_wait` (seconds) waits for a full first car before starting
    a smaller one. `retry_flaky` reruns a red car's failed Actions jobs up to that many times
    before bisecting (a check that then passes is a flake, listed in `TrainResult.flaky`, never
    held against a PR). `explain(repo, sha, check)` returns a failed check's first failure line for
    the comment on a PR a red car drops (the CLI reads it as `ci-failures` does).
    `land` is how a green car lands: `merge` (default) merges its PRs through the forge one by
    one, each guarded by its head; `push` fast-forwards the base to the car commit itself (a ref
    update the forge refuses unless it is a fast-forward), so every tree the base ever holds is
    one CI saw green, and the forge marks the car's PRs merged. `push` needs the right to push
    to the base past its protection (a bypass actor); it is checked only with `batch`.
    `speculate` K (0 to 8, default 0) lets up to K further cars ride on the car in CI, each built
    on the commit of the one before and in CI at the same time: when the car lands, the next
    was tested on exactly the base's tree plus its PRs and lands without another run; when it
    is red, the cars on it are discarded (never landed; their PRs go back to the queue). A red
    car's halves are tested at once when more than one car may be in CI: the second half's
    next step rides on the first half. `max_cars` (1 to 16; default 1 + `speculate`) caps the
    cars in CI at once, speculative and bisection cars together.

    `on_poll` sees each poll of each CI wait (`CiPoll`, with the PR's number in `pr`).
    `timeout` and `interval` bound each CI wait (and the wait for update-branch's new head).
    `grace` (seconds) is how long a CI wait treats a required check with no run yet as pending
    before it drops the PR (`<context>=never reported`). None: `DEFAULT_TRAIN_GRACE`, and with
    `batch` each required check's grace comes from its recent runs on the base
    (`_train_preflight`: a multiple of how late it started after the commit's first check,
    within [120 s, timeout]; DEFAULT_TRAIN_GRACE without history). With `batch` the train's
    preflight also stops before the first car when no workflow on the base runs on a push to a
    car branch (the NOTE lines name checks from external CIs, which it cannot read).
    A batched run keeps its account (PRs merged and dropped, flakes) in one summary comment on
    the label's issue (`_train_summary`); a rerun after a kill carries it over.
    With `dry_run` nothing is written (not even the clone) and each line says what would happen.
    A repository the forge answers 404 for raises that ForgeCliError (status 404): there is no
    train to stop.
    """
    validate_repo(repo)
    validate_label(label)
    check_wait_bounds(timeout, interval, grace)
    if batch is not None and (isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH):
        raise ForgeInputError("batch", f"must be a whole number from 1 to {MAX_BATCH}")
    if not (max_wait >= 0 and math.isfinite(max_wait)):
        raise ForgeInputError("max_wait", "must be a finite number of seconds >= 0")
    if isinstance(retry_flaky, bool) or not 0 <= retry_flaky <= MAX_RETRIES:
        raise ForgeInputError("retry_flaky", f"must be a whole number from 0 to {MAX_RETRIES}")
    if land not in LAND_MODES:
        raise ForgeInputError("land", f"must be one of {', '.join(LAND_MODES)}")
    if isinstance(speculate, bool) or not 0 <= speculate <= MAX_SPECULATE:
        raise ForgeInputError("speculate", f"must be a whole number from 0 to {MAX_SPECULATE}")
    if max_cars is not None and (isinstance(max_cars, bool) or not 1 <= max_cars <= MAX_CARS):
        raise ForgeInputError("max_cars", f"must be a whole number from 1 to {MAX_CARS}")
    from ._train_batch import BatchTrain
    from ._train_turn import _SerialTrain

    kind = _SerialTrain if batch is None else BatchTrain
    train = kind(
        port=port,
        repo=repo,
        label=label,
        emit=emit,
        clone=clone,
        dry_run=dry_run,
        timeout=timeout,
        interval=interval,
        grace=DEFAULT_TRAIN_GRACE if grace is None else grace,
        grace_given=grace is not None,
        git=git,
        sleep=sleep,
        clock=clock,
        delays=delays,
        on_poll=on_poll,
        batch=batch,
        max_wait=max_wait,
        retry_flaky=retry_flaky,
        explain=explain,
        land=land,
        speculate=speculate,
        max_cars=max_cars,
    )
    return train.run()
