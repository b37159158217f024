"""A week of agent sessions over three accounts, and each account's true usage as it happens.

`week_of_sessions` draws a realistic week from a seed: work blocks on weekdays (a morning and an
afternoon burst, two evenings), a short block on the weekend, idle nights; in a block a new
session starts every 40 to 75 minutes, each using its account at its own rate (light, steady or
heavy). `Accounts` plays the provider's meter: a session's use goes to the account it was started
on; an account's five-hour window opens at its first use after the last one ended and resets
five hours later; its seven-day window resets at a fixed time each week (a different day per
account); use stops at 100% of either window (the client is stopped there). Time only moves
forward (`advance_to`), integrated exactly from edge to edge; each window's true fill time is kept.
Pure: no file, socket or clock.
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass, field

__all__ = [
    "DAY",
    "FIVE_H",
    "HOUR",
    "JITTER_S",
    "RHYTHMS",
    "WEEK",
    "Accounts",
    "Filled",
    "Session",
    "account_trace",
    "fill_range",
    "week_of_sessions",
]

HOUR = 3600.0
DAY = 24 * HOUR
FIVE_H = 5 * HOUR
WEEK = 7 * DAY
BURST_S = 900.0
BURST, LULL = 1.6, 0.4
"""An account's use alternates a burst and a lull of `BURST_S` each at these times its mean."""
JITTER_S = 600.0
"""How far a block's start moves from its nominal time, either way, from day to day."""
WEEK_SHARE = 0.16
"""A percent of a five-hour window is this many percent of the week: six full windows a week."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One agent session: when it starts and ends, and its use in % of a five-hour window per
    hour while it runs."""

    start: float
    end: float
    rate: float


def week_of_sessions(start: float, *, seed: int) -> list[Session]:
    """Draw the sessions one machine starts in a week from `start` (a Monday 00:00)."""
    rng = random.Random(seed)
    sessions: list[Session] = []
    for day in range(7):
        blocks = [(10.0, 13.0)] if day >= 5 else [(9.0, 12.5), (13.5, 18.0)]
        if day in (0, 2):
            blocks.append((20.0, 23.0))  # an evening burst, Mondays and Wednesdays
        for first, last in blocks:
            t = start + day * DAY + first * HOUR + rng.uniform(0, 900)
            end_of_block = start + day * DAY + last * HOUR
            while t < end_of_block:
                length = rng.uniform(40, 75) * 60
                rate = rng.choice((25.0, 45.0, 70.0))
                sessions.append(
                    Session(start=t, end=min(t + length - 120, end_of_block), rate=rate)
                )
                t += length
    return sessions


RHYTHMS: dict[str, tuple[tuple[int, ...], tuple[tuple[float, float], ...], float]] = {
    # account: (days of the week, work blocks in hours, mean use in % of five hours per hour)
    "a": ((0, 1, 2, 3, 4), ((9.0, 12.0), (13.0, 18.0)), 27.0),
    "b": ((0, 1, 2, 3, 4), ((10.0, 13.0), (14.0, 19.0), (20.5, 23.0)), 24.0),
    "c": ((0, 1, 2, 3, 4, 5, 6), ((8.0, 11.0), (15.0, 20.0)), 17.0),
}
"""Who uses each account, as recorded: a day job, a long day with evenings, every day lightly."""


def account_trace(
    name: str,
    start: float,
    *,
    seed: int,
    after: float | None = None,
    shift: float | None = None,
    flip: bool = False,
) -> list[Session]:
    """The recorded use of account `name` over the week from `start`: in each of its blocks,
    bursts of 15 minutes at 1.6 times its mean rate and 15 at 0.4 times (`BURST_S`, `BURST`,
    `LULL`), the block's start moved by up to ten minutes (`JITTER_S`) and its rate by up to 10%
    from day to day.

    With `after`, the same trace up to `after` and one way it could have gone on from there
    (`fill_range`): each block not started by then starts `shift` seconds from its nominal time
    (no earlier than `after`) instead of its drawn one, and with `flip` the bursts and lulls
    change places from `after` on. What happened up to `after` is the same either way.
    """
    rng = random.Random(f"{seed}:{name}")
    days, blocks, rate = RHYTHMS[name]
    sessions: list[Session] = []
    for day in days:
        scale = rng.uniform(0.9, 1.1)
        for first, last in blocks:
            nominal = start + day * DAY + first * HOUR
            t = nominal + rng.uniform(-JITTER_S, JITTER_S)
            if after is not None and shift is not None and t > after:
                t = max(after, nominal + shift)
            end = start + day * DAY + last * HOUR
            burst = True
            while t < end:
                stop = min(t + BURST_S, end)
                factor = BURST if burst else LULL
                flipped = LULL if burst else BURST
                if after is None or not flip or stop <= after:
                    sessions.append(Session(start=t, end=stop, rate=rate * scale * factor))
                elif t >= after:
                    sessions.append(Session(start=t, end=stop, rate=rate * scale * flipped))
                else:  # the burst or lull that `after` cuts: flipped from `after` on
                    sessions.append(Session(start=t, end=after, rate=rate * scale * factor))
                    sessions.append(Session(start=after, end=stop, rate=rate * scale * flipped))
                t += BURST_S
                burst = not burst
    return sessions


@dataclass(frozen=True, slots=True, kw_only=True)
class Filled:
    """A window that reached 100%: which, when it opened and when it filled (true times)."""

    account: str
    window: str
    opened: float
    resets_at: float
    full_at: float


@dataclass
class _Meter:
    five_opened: float | None = None
    five_used: float = 0.0
    week_resets: float = 0.0
    week_used: float = 0.0


@dataclass
class Accounts:
    """The true use of each account (see the module doc); `assign` puts a session on one."""

    names: tuple[str, ...]
    now: float
    week_resets: dict[str, float]
    meters: dict[str, _Meter] = field(init=False)
    sessions: list[tuple[str, Session]] = field(default_factory=list)
    filled: list[Filled] = field(default_factory=list)
    _edges: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.meters = {n: _Meter(week_resets=self.week_resets[n]) for n in self.names}

    def assign(self, name: str, session: Session) -> None:
        """Run `session` on account `name` from its start."""
        self.sessions.append((name, session))
        bisect.insort(self._edges, session.start)
        bisect.insort(self._edges, session.end)

    def active(self, name: str, at: float) -> list[Session]:
        """The sessions running on `name` at `at`."""
        return [s for n, s in self.sessions if n == name and s.start <= at < s.end]

    def advance_to(self, when: float) -> None:
        """Integrate every account's use up to `when` (never back): exactly, since the rates
        are constant between session edges and resets, which are the steps."""
        while self.now < when:
            following = bisect.bisect_right(self._edges, self.now)
            edges = [when, *self._edges[following : following + 1]]
            for meter in self.meters.values():
                if meter.five_opened is not None:
                    edges.append(meter.five_opened + FIVE_H)
                edges.append(meter.week_resets)
            step = min(e for e in edges if e > self.now) - self.now
            for name in self.names:
                self._step(name, self.now, step)
            self.now += step

    def _step(self, name: str, t: float, step: float) -> None:
        meter = self.meters[name]
        if meter.five_opened is not None and t >= meter.five_opened + FIVE_H:
            meter.five_opened, meter.five_used = None, 0.0
        if t >= meter.week_resets:
            meter.week_resets += WEEK
            meter.week_used = 0.0
        rate = sum(s.rate for s in self.active(name, t))
        if not rate or meter.five_used >= 100 or meter.week_used >= 100:
            return
        if meter.five_opened is None:
            meter.five_opened = t
        use = rate * step / HOUR
        # Use stops when either window fills, the other's too: take only what comes before.
        take = min(use, 100 - meter.five_used, (100 - meter.week_used) / WEEK_SHARE)
        at = t + step * take / use
        if meter.five_used + take >= 100 - 1e-9:
            self.filled.append(
                Filled(
                    account=name,
                    window="five_hour",
                    opened=meter.five_opened,
                    resets_at=meter.five_opened + FIVE_H,
                    full_at=at,
                )
            )
        if meter.week_used + take * WEEK_SHARE >= 100 - 1e-9:
            self.filled.append(
                Filled(
                    account=name,
                    window="seven_day",
                    opened=meter.week_resets - WEEK,
                    resets_at=meter.week_resets,
                    full_at=at,
                )
            )
        meter.five_used = min(100.0, meter.five_used + take)
        meter.week_used = min(100.0, meter.week_used + take * WEEK_SHARE)

    def usage(self, name: str) -> dict[str, tuple[float, float | None]]:
        """Each window's use now and its reset time (None: no five-hour window open)."""
        meter = self.meters[name]
        opened = meter.five_opened
        five_resets = None if opened is None or self.now >= opened + FIVE_H else opened + FIVE_H
        five = meter.five_used if five_resets is not None else 0.0
        week = meter.week_used if self.now < meter.week_resets else 0.0
        resets = meter.week_resets if self.now < meter.week_resets else meter.week_resets + WEEK
        return {"five_hour": (five, five_resets), "seven_day": (week, resets)}


def fill_range(
    filled: Filled, at: float, *, start: float, seed: int, week_resets: float
) -> tuple[float, float]:
    """The earliest and latest times window `filled` of account trace `seed` from `start` (its
    weekly window resetting at `week_resets`) could have filled, as seen at `at`: with the use
    up to `at` as it was and from `at` on each way the trace could have gone that the history
    up to `at` cannot tell apart (`account_trace`'s `after`): the bursts and lulls in their
    phase or flipped, and each block not yet started at its drawn time or at its earliest or
    latest. A way in which the window does not fill counts as filling at its reset.

    A burst and a lull together last half an hour, so readings half an hour apart show the same
    use in either phase; and no reading before a block starts tells when it will. Either can
    move a fill past a pause: a five-hour window whose last percent would fall just before the
    end of a working day fills the next morning (or not at all) when the bursts fall the other
    way, and so does a week whose five-hour window fills first."""
    name = filled.account
    times: list[float] = []
    for shift, flip in itertools.product((None, -JITTER_S, JITTER_S), (False, True)):
        meter = Accounts(names=(name,), now=start - HOUR, week_resets={name: week_resets})
        for session in account_trace(name, start, seed=seed, after=at, shift=shift, flip=flip):
            meter.assign(name, session)
        meter.advance_to(filled.resets_at)
        same = (
            f.full_at
            for f in meter.filled
            if f.window == filled.window and f.resets_at == filled.resets_at
        )
        times.append(next(same, filled.resets_at))
    return min(times), max(times)
