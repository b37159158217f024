"""A train car: the base tip with PRs merged onto it in queue order, built in the clone with git.

The car is built without a work tree (`git merge-tree --write-tree`, then `git commit-tree`):
each PR's head is merged onto the car so far; a head that conflicts with it is left out (it keeps
its label; its turn comes in a later car, on a base that holds the others). The car's commits
carry a fixed author, committer and date, so the same base tip and heads always give the same
car commit, and its branch `train/<base>/<id>` is named from that commit: a rerun after a crash
finds the car it pushed, with the CI that already ran on it.

Pushes never force: a car branch is created only where none exists (`--force-with-lease` with an
empty expectation), and deleted only while it still points at the car (`--force-with-lease` at
the car's commit), so a tested commit is never overwritten and nobody else's push is lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ._errors import ForgeError
from ._exec import ExecOptions, GitExec
from ._redact import redact_forge_secrets

__all__ = ["CAR_PREFIX", "Car", "CarGit", "CarGitError"]

CAR_PREFIX = "train/"
_TIMEOUT = 300.0
# Who writes a car, and when: fixed, so a car is a function of its base tip and heads.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "forge-cli train",
    "GIT_AUTHOR_EMAIL": "train@forge-cli.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "forge-cli train",
    "GIT_COMMITTER_EMAIL": "train@forge-cli.invalid",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


class CarGitError(Exception):
    """git in the clone failed: the train stops (nothing about a PR is known from it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Car:
    """One car: its branch, the base tip it starts at, its commit and tree, the PRs it holds."""

    branch: str
    base: str
    base_tip: str
    sha: str
    tree: str
    prs: tuple[tuple[int, str], ...]
    left_out: tuple[int, ...] = ()

    def numbers(self) -> str:
        """Return the car's PRs as `#1,#2`."""
        return ",".join(f"#{n}" for n, _ in self.prs)


class CarGit:
    """git in the train's clone: fetch, build, push and delete cars, read the base's tree."""

    def __init__(self, clone: str, git: GitExec | None) -> None:
        if git is None:
            from ._git import exec_git

            git = exec_git
        self.clone, self._git = clone, git

    def _run(self, *args: str, ok: Sequence[int] = (0,)) -> tuple[int, str]:
        try:
            done = self._git(
                list(args), ExecOptions(cwd=self.clone, timeout=_TIMEOUT, env=_IDENTITY)
            )
        except (ForgeError, OSError) as exc:
            what = redact_forge_secrets(str(exc))[:300]
            raise CarGitError(f"cannot run git {args[0]} in {self.clone}: {what}") from None
        if done.returncode not in ok:
            raise CarGitError(f"git {args[0]} in {self.clone} failed (exit {done.returncode})")
        return done.returncode, done.stdout.decode("utf-8", "replace").strip()

    def fetch_base(self, base: str) -> str:
        """Fetch the base branch; return its tip as the remote has it."""
        self._run("fetch", "--quiet", "--no-tags", "origin", f"refs/heads/{base}")
        return self._run("rev-parse", "FETCH_HEAD^{commit}")[1]

    def tree(self, sha: str) -> str:
        """Return the tree of commit `sha`."""
        return self._run("rev-parse", f"{sha}^{{tree}}")[1]

    def build(self, base: str, base_tip: str, prs: Sequence[tuple[int, str]]) -> Car:
        """Merge the heads onto `base_tip` in order; leave out each one that conflicts."""
        tip, tree = base_tip, self.tree(base_tip)
        merged: list[tuple[int, str]] = []
        left_out: list[int] = []
        for number, head in prs:
            code, out = self._run(
                "merge-tree", "--write-tree", "--no-messages", tip, head, ok=(0, 1)
            )
            if code == 1:
                left_out.append(number)
                continue
            tree = out.splitlines()[0]
            message = f"forge-cli train: merge #{number} at {head}"
            tip = self._run("commit-tree", tree, "-p", tip, "-p", head, "-m", message)[1]
            merged.append((number, head))
        ident = hashlib.sha256(f"{base}\n{tip}".encode()).hexdigest()[:12]
        return Car(
            branch=f"{CAR_PREFIX}{base}/{ident}",
            base=base,
            base_tip=base_tip,
            sha=tip,
            tree=tree,
            prs=tuple(merged),
            left_out=tuple(left_out),
        )

    def remote_sha(self, branch: str) -> str | None:
        """Return where `branch` points on the remote, None when it does not exist."""
        out = self._run("ls-remote", "origin", f"refs/heads/{branch}")[1]
        return out.split()[0] if out else None

    def same_tree(self, car: Car, *, descends: bool = False) -> Car | None:
        """Return a car of the same base already on the remote with the car's tree (pushed by an
        earlier run that stopped, or a speculative car), None when there is none. With
        `descends` only a car whose commit descends from the car's base tip counts (one the
        base can be fast-forwarded to)."""
        prefix = f"refs/heads/{CAR_PREFIX}{car.base}/"
        listing = self._run("ls-remote", "origin", f"{prefix}*")[1]
        found = [line.split() for line in listing.splitlines() if line.strip()]
        others = [(sha, ref) for sha, ref in found if sha != car.sha]
        if not others:
            return None
        self._run("fetch", "--quiet", "--no-tags", "origin", *(ref for _, ref in others))
        for sha, ref in others:
            if self.tree(sha) == car.tree and (not descends or self._descends(sha, car.base_tip)):
                return replace(car, branch=ref.removeprefix("refs/heads/"), sha=sha)
        return None

    def _descends(self, sha: str, ancestor: str) -> bool:
        code = self._run("merge-base", "--is-ancestor", ancestor, sha, ok=(0, 1))[0]
        return code == 0

    def push(self, car: Car) -> bool:
        """Create the car's branch at its commit; False when it was there already."""
        there = self.remote_sha(car.branch)
        if there == car.sha:
            return False
        if there is not None:
            raise CarGitError(
                f"{car.branch} exists at {there}, not at the car {car.sha}; it is left alone"
            )
        ref = f"refs/heads/{car.branch}"
        self._run("push", "--quiet", f"--force-with-lease={ref}:", "origin", f"{car.sha}:{ref}")
        return True

    def sweep(self, base: str) -> None:
        """Delete every car branch of `base` left by an earlier run that stopped (each only
        while it still points where the listing found it)."""
        prefix = f"refs/heads/{CAR_PREFIX}{base}/"
        listing = self._run("ls-remote", "origin", f"{prefix}*")[1]
        for sha, ref in (line.split() for line in listing.splitlines() if line.strip()):
            self._run("push", "--quiet", f"--force-with-lease={ref}:{sha}", "origin", f":{ref}")

    def delete(self, car: Car) -> None:
        """Delete the car's branch if it still points at the car."""
        ref = f"refs/heads/{car.branch}"
        if self.remote_sha(car.branch) == car.sha:
            self._run("push", "--quiet", f"--force-with-lease={ref}:{car.sha}", "origin", f":{ref}")
