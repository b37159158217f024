"""A test-forge repository whose commits and branches live in a real bare git repository, and the
simulated CI that runs on the trees pushed to it.

`GitBacking(bare)` set as `RepoState.git` makes the bare repository the forge's storage: before
each request the server syncs the state's branches and commits from it (a real `git push` into it
shows at the forge's next answer, as a push to GitHub does), and the forge's own writes (a merge,
a deleted branch) are made in git too, so a merge has a real tree a clone can fetch and compare.

`SimulatedCi` set as `RepoState.ci`: every new tip of a watched branch (`train/` by default) is
one CI run: one check run per check, in progress until `duration` seconds after the forge first
saw the tip, then a conclusion from `failure(check, paths)` (the failure line, or None for green)
over the tree's file paths. `flaky` names a check whose first run on the first tree it fails on
fails without cause. A rerun (`POST .../actions/jobs/{id}/rerun`) starts a new run of that check.
`runs` counts the trees CI ran on and `reruns` the job reruns; `green_trees` holds every tree
all checks passed on (the invariant "every base tree is one CI saw green" reads it).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakeforge.state import RepoState

__all__ = ["GitBacking", "SimulatedCi", "api_v1_failure", "train_world"]


@dataclass
class GitBacking:
    """The bare git repository behind one test-forge repository."""

    bare: str
    seen: dict[str, str] = field(default_factory=dict)

    def git(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
        """Run git in the bare repository; return its exit code and stdout (stripped)."""
        done = subprocess.run(
            ["git", "-C", self.bare, *args], capture_output=True, text=True, check=False
        )
        if done.returncode not in ok:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.returncode, done.stdout.strip()

    def heads(self) -> dict[str, str]:
        """Return every branch of the bare repository and its tip."""
        _, out = self.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
        pairs = (line.split() for line in out.splitlines())
        return {ref.removeprefix("refs/heads/"): sha for ref, sha in pairs}

    def sync(self, repo: RepoState) -> None:
        """Bring the state's branches and commits in line with what was pushed to git."""
        heads = self.heads()
        if heads == self.seen:
            return
        _, listing = self.git("log", "--all", "--format=%H %P%x09%cI%x09%s")
        for line in listing.splitlines():
            shas, date, subject = line.split("\t", 2)
            sha, *parents = shas.split()
            repo.commits.setdefault(sha, (tuple(parents), subject, date))
        for name in set(self.seen) - set(heads):
            repo.branches.pop(name, None)
        for name, sha in heads.items():
            if self.seen.get(name) != sha:
                repo.branches[name] = sha
        self.seen = heads

    def set_branch(self, repo: RepoState, name: str, sha: str | None) -> None:
        """Point (or, with None, delete) a branch in git and in the state."""
        if sha is None:
            self.git("update-ref", "-d", f"refs/heads/{name}")
            repo.branches.pop(name, None)
            self.seen.pop(name, None)
        else:
            self.git("update-ref", f"refs/heads/{name}", sha)
            repo.branches[name] = sha
            self.seen[name] = sha

    def merge(
        self, repo: RepoState, base: str, head: str, parents: tuple[str, ...], msg: str
    ) -> str:
        """Commit the merge of `head` into `base` with `parents`; return its sha.

        A conflict raises ValueError (the forge answers 405 for it).
        """
        code, out = self.git("merge-tree", "--write-tree", "--no-messages", base, head, ok=(0, 1))
        if code == 1:
            raise ValueError(f"{head} conflicts with {base}")
        tree = out.splitlines()[0]
        args = [arg for parent in parents for arg in ("-p", parent)]
        _, sha = self.git("commit-tree", tree, *args, "-m", msg)
        repo.commits[sha] = (parents, msg.splitlines()[0], "2024-01-03T00:00:00Z")
        return sha

    def tree(self, sha: str) -> str:
        """Return the tree of commit `sha`."""
        return self.git("rev-parse", f"{sha}^{{tree}}")[1]

    def paths(self, sha: str) -> frozenset[str]:
        """Return every file path in commit `sha`'s tree."""
        return frozenset(self.git("ls-tree", "-r", "--name-only", sha)[1].splitlines())


@dataclass
class SimulatedCi:
    """CI on a git-backed repository: checks per new tip of a watched branch, done after a while."""

    failure: Callable[[str, frozenset[str]], str | None]
    checks: tuple[str, ...] = ("ci",)
    duration: float = 0.5
    watch: str = "train/"
    flaky: str | None = None
    clock: Callable[[], float] = time.monotonic
    runs: int = 0
    reruns: int = 0
    started: set[str] = field(default_factory=set)
    green_trees: set[str] = field(default_factory=set)
    # run id -> (deadline, the run's dict); `flaked` once the flaky check failed once.
    pending: dict[int, tuple[float, dict[str, Any]]] = field(default_factory=dict)
    flaked: bool = False

    def tick(self, repo: RepoState) -> None:
        """Start CI on new watched tips; conclude the runs whose time has come."""
        assert repo.git is not None
        now = self.clock()
        for name, sha in sorted(repo.branches.items()):
            if name.startswith(self.watch) and sha not in self.started:
                self.started.add(sha)
                self.runs += 1
                for check in self.checks:
                    self._start(repo, sha, check, now)
        for run_id, (deadline, run) in sorted(self.pending.items()):
            if deadline <= now:
                del self.pending[run_id]
                self._conclude(repo, run)

    def rerun(self, repo: RepoState, run: dict[str, Any]) -> None:
        """Start the check of `run` again on the same tree (a job rerun)."""
        self.reruns += 1
        self._start(repo, str(run["head_sha"]), str(run["name"]), self.clock())

    def _start(self, repo: RepoState, sha: str, check: str, now: float) -> None:
        run = repo.add_run(sha, check, None, run_id=70000 + len(repo.check_runs))
        self.pending[int(run["id"])] = (now + self.duration, run)

    def _conclude(self, repo: RepoState, run: dict[str, Any]) -> None:
        assert repo.git is not None
        sha, check = str(run["head_sha"]), str(run["name"])
        line = self.failure(check, repo.git.paths(sha))
        if line is None and check == self.flaky and not self.flaked:
            self.flaked = True
            line = f"FAILED tests/test_{check}.py::test_network - ConnectionResetError: flake"
        run.update(
            status="completed",
            conclusion="success" if line is None else "failure",
            completed_at="2024-01-01T00:05:00Z",
        )
        log = "\n".join(["collected 3 items", line or "3 passed", ""]).encode()
        repo.job_logs[int(run["id"])] = log
        latest = {
            str(r["name"]): r
            for r in repo.check_runs
            if r["head_sha"] == sha and r["name"] in self.checks
        }
        if len(latest) == len(self.checks) and all(
            r["conclusion"] == "success" for r in latest.values()
        ):
            self.green_trees.add(repo.git.tree(sha))


def _git(cwd: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def train_world(
    repo: RepoState,
    where: str,
    *,
    prs: int,
    broken: Sequence[int] = (),
    duration: float = 0.5,
    flaky: str | None = None,
    checks: tuple[str, ...] = ("ci",),
    label: str = "merge-train",
) -> str:
    """Give `repo` a bare git repository under `where` with `prs` labelled PRs and simulated CI;
    return the path of a clone whose origin it is.

    Every PR forks from the root and adds a file of its own; `main` then gains `api-v2`. A broken
    PR adds `uses-api-v1-<n>`: green alone (its head's `ci` passed), red beside today's base.
    """
    bare, work = f"{where}/origin.git", f"{where}/work"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", bare], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", work], check=True)
    for key, value in (("user.name", "Dev"), ("user.email", "dev@example.com")):
        _git(work, "config", key, value)

    def commit(path: str, text: str, message: str) -> str:
        with open(f"{work}/{path}", "w", encoding="utf-8") as handle:
            handle.write(text)
        _git(work, "add", path)
        _git(work, "commit", "-q", "-m", message)
        return _git(work, "rev-parse", "HEAD")

    root = commit("README", "widgets\n", "root")
    heads: dict[int, str] = {}
    for number in range(1, prs + 1):
        _git(work, "checkout", "-q", "-b", f"topic{number}", root)
        name = f"uses-api-v1-{number}" if number in broken else f"change-{number}.txt"
        heads[number] = commit(name, f"change {number}\n", f"Change {number}")
    _git(work, "checkout", "-q", "main")
    commit("api-v2", "v2\n", "api v2")
    _git(work, "push", "-q", bare, "--all")
    for number, head in heads.items():
        _git(bare, "update-ref", f"refs/pull/{number}/head", head)
    repo.git = GitBacking(bare)
    repo.git.sync(repo)
    repo.set_rulesets("main", list(checks))
    repo.ci = SimulatedCi(failure=api_v1_failure, checks=checks, duration=duration, flaky=flaky)
    for number, head in heads.items():
        repo.add_pr(number, head_ref=f"topic{number}", head_sha=head, title=f"Change {number}")
        repo.pr_commits[number] = [head]
        repo.labels[number] = [label]
        for check in checks:
            repo.add_run(head, check, "success")
    clone = f"{where}/clone"
    subprocess.run(["git", "clone", "-q", bare, clone], check=True)
    return clone


def api_v1_failure(check: str, paths: frozenset[str]) -> str | None:
    """The simulated CI's verdict: a tree with `api-v2` and a `uses-api-v1-*` file fails."""
    if check != "ci" or "api-v2" not in paths:
        return None
    users = sorted(p for p in paths if p.startswith("uses-api-v1-"))
    if not users:
        return None
    return f"FAILED tests/test_api.py::test_client - ImportError: {users[0]} needs api v1"
