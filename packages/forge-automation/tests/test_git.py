"""exec_git and ls_remote_pull_head against real bare repos over file://."""

from __future__ import annotations

import os
import subprocess
import traceback
from collections.abc import Sequence
from pathlib import Path

import pytest

from forge_automation import (
    ExecOptions,
    ExecResult,
    ForgeError,
    ForgeInputError,
    LsRemoteError,
    exec_git,
    ls_remote_pull_head,
)

CANARY = "ghs_" + "CanaryGitToken" * 3
HEADER_SECRET = "Authorization: Basic c2VjcmV0LXZhbHVlLWZvci1naXQ="


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare repo with refs/pull/7/head and a decoy ref that ends in refs/pull/8/head."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "a.txt").write_text("a\n")
    git(work, "add", ".")
    git(work, "commit", "-qm", "one")
    first = git(work, "rev-parse", "HEAD")
    (work / "a.txt").write_text("b\n")
    git(work, "commit", "-qam", "two")
    second = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-ref", "refs/pull/7/head", second)
    git(bare, "update-ref", "refs/decoy/refs/pull/8/head", first)
    return bare, first, second


class Recorder:
    def __init__(self, inner: object = exec_git) -> None:
        self.calls: list[tuple[list[str], dict[str, str]]] = []
        self.inner = inner

    def __call__(self, args: Sequence[str], options: ExecOptions) -> ExecResult:
        self.calls.append((list(args), dict(options.env or {})))
        assert callable(self.inner)
        result: ExecResult = self.inner(args, options)
        return result


def test_reads_the_pull_head_sha(remote: tuple[Path, str, str]) -> None:
    bare, _, second = remote
    recorder = Recorder()
    assert ls_remote_pull_head(recorder, f"file://{bare}", 7) == second
    args, env = recorder.calls[0]
    assert args == ["ls-remote", "--", f"file://{bare}", "refs/pull/7/head"]
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_a_missing_ref_is_none(remote: tuple[Path, str, str]) -> None:
    bare, _, _ = remote
    assert ls_remote_pull_head(exec_git, f"file://{bare}", 9) is None


def test_only_an_exact_ref_line_counts(remote: tuple[Path, str, str]) -> None:
    bare, _, _ = remote
    # git itself lists refs/decoy/refs/pull/8/head for the pattern refs/pull/8/head.
    listed = git(bare, "ls-remote", "--", f"file://{bare}", "refs/pull/8/head")
    assert "refs/decoy/refs/pull/8/head" in listed
    assert ls_remote_pull_head(exec_git, f"file://{bare}", 8) is None


def test_credentials_in_env_reach_git_but_not_argv(remote: tuple[Path, str, str]) -> None:
    bare, _, second = remote
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": HEADER_SECRET,
    }
    environ_before = dict(os.environ)
    recorder = Recorder()
    assert ls_remote_pull_head(recorder, f"file://{bare}", 7, env=env, timeout=30) == second
    args, child_env = recorder.calls[0]
    assert all(HEADER_SECRET not in a for a in args)
    assert child_env["GIT_CONFIG_VALUE_0"] == HEADER_SECRET
    assert dict(os.environ) == environ_before


def test_a_failing_git_raises_with_secrets_cut(tmp_path: Path) -> None:
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader"}
    env["GIT_CONFIG_VALUE_0"] = HEADER_SECRET

    def leaky(args: Sequence[str], options: ExecOptions) -> ExecResult:
        value = (options.env or {})["GIT_CONFIG_VALUE_0"]
        return ExecResult(
            returncode=128,
            stdout=b"",
            stderr=f"fatal: auth failed with {value} and {CANARY}\n".encode(),
        )

    with pytest.raises(LsRemoteError) as caught:
        ls_remote_pull_head(leaky, "https://forge.example/acme/widgets.git", 7, env=env)
    text = "".join(traceback.format_exception(caught.value))
    assert HEADER_SECRET not in text
    assert "c2VjcmV0" not in text
    assert CANARY not in text
    assert "exited 128" in text
    assert "[redacted]" in text


def test_a_real_missing_repo_is_an_error_never_none(tmp_path: Path) -> None:
    with pytest.raises(LsRemoteError, match="exited 128"):
        ls_remote_pull_head(exec_git, f"file://{tmp_path}/absent.git", 7)


def test_a_token_split_across_stdout_and_stderr_is_cut() -> None:
    def split(args: Sequence[str], options: ExecOptions) -> ExecResult:
        return ExecResult(returncode=2, stdout=CANARY[:9].encode(), stderr=CANARY[9:].encode())

    with pytest.raises(LsRemoteError) as caught:
        ls_remote_pull_head(split, "https://forge.example/r.git", 1)
    assert CANARY[9:] not in str(caught.value)
    assert CANARY[:9] not in str(caught.value)


@pytest.mark.parametrize(
    "stdout",
    [
        b"not-a-sha\trefs/pull/7/head\n",
        b"abc\trefs/pull/7/head\n",
        b"garbage line\n",
        "é".encode(),
    ],
)
def test_output_without_an_object_id_is_an_error(stdout: bytes) -> None:
    def fake(args: Sequence[str], options: ExecOptions) -> ExecResult:
        return ExecResult(returncode=0, stdout=stdout, stderr=b"")

    with pytest.raises(LsRemoteError):
        ls_remote_pull_head(fake, "https://forge.example/r.git", 7)


def test_an_exec_that_raises_becomes_ls_remote_error() -> None:
    def broken(args: Sequence[str], options: ExecOptions) -> ExecResult:
        raise OSError(f"cannot start with {CANARY}")

    with pytest.raises(LsRemoteError) as caught:
        ls_remote_pull_head(broken, "https://forge.example/r.git", 7)
    assert CANARY not in str(caught.value)
    assert caught.value.__context__ is None


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("https://user:pass@forge.example/r.git", "remote_url"),
        ("https://user@forge.example/r.git", "remote_url"),
        (f"https://x-access-token:{CANARY}@forge.example/r.git", "remote_url"),
        ("http://forge.example/r.git", "remote_url"),
        ("ssh://git@forge.example/r.git", "remote_url"),
        ("git@forge.example:r.git", "remote_url"),
        ("ext::sh -c touch% /tmp/pwned", "remote_url"),
        ("--upload-pack=touch /tmp/pwned", "remote_url"),
        ("/tmp/local/path", "remote_url"),
        ("file://otherhost/tmp/r.git", "remote_url"),
        ("file:relative/r.git", "remote_url"),
        ("https:///r.git", "remote_url"),
        ("https://forge.example/r.git?access_token=x", "remote_url"),
        ("https://forge.example/r.git#frag", "remote_url"),
        ("https://forge.example/r .git", "remote_url"),
        ("https://forge.example/r\n.git", "remote_url"),
        ("https://forge.example:99999/r.git", "remote_url"),
        ("HTTPS://forge.example/r.git", "remote_url"),
        ("", "remote_url"),
    ],
)
def test_bad_urls_are_refused_before_git_runs(url: str, field: str) -> None:
    recorder = Recorder()
    with pytest.raises(ForgeInputError) as caught:
        ls_remote_pull_head(recorder, url, 7)
    assert caught.value.field == field
    assert recorder.calls == []
    assert CANARY not in str(caught.value)


@pytest.mark.parametrize("n", [0, -1, True, "7", 2**31])
def test_bad_numbers_are_refused(n: object) -> None:
    recorder = Recorder()
    with pytest.raises(ForgeInputError) as caught:
        ls_remote_pull_head(recorder, "https://forge.example/r.git", n)  # type: ignore[arg-type]
    assert caught.value.field == "n"
    assert recorder.calls == []


@pytest.mark.parametrize("env", [{"A=B": "x"}, {"": "x"}, {"A": "x\0y"}, {"A": 1}])
def test_bad_env_is_refused_without_echoing_values(env: dict[str, object]) -> None:
    recorder = Recorder()
    with pytest.raises(ForgeInputError) as caught:
        ls_remote_pull_head(recorder, "https://forge.example/r.git", 1, env=env)  # type: ignore[arg-type]
    assert caught.value.field == "env"
    assert recorder.calls == []


def test_exec_git_keeps_env_to_the_child(tmp_path: Path) -> None:
    result = exec_git(
        ["config", "--get", "x.y"],
        ExecOptions(
            env={
                "GIT_TERMINAL_PROMPT": "1",
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "x.y",
                "GIT_CONFIG_VALUE_0": "z",
            },
            cwd=str(tmp_path),
        ),
    )
    assert result.returncode == 0
    assert result.stdout == b"z\n"
    assert "GIT_CONFIG_VALUE_0" not in os.environ


def test_exec_git_prompt_variable_is_zero(tmp_path: Path) -> None:
    # `git -c alias.p='!printenv GIT_TERMINAL_PROMPT'` shows the child's environment.
    result = exec_git(
        ["-c", "alias.p=!printenv GIT_TERMINAL_PROMPT", "p"],
        ExecOptions(env={"GIT_TERMINAL_PROMPT": "1"}, cwd=str(tmp_path)),
    )
    assert result.stdout == b"0\n"


def test_exec_git_timeout_is_a_forge_error(tmp_path: Path) -> None:
    with pytest.raises(ForgeError, match="timed out") as caught:
        exec_git(
            ["-c", f"alias.s=!sleep 5 # {CANARY}", "s"],
            ExecOptions(timeout=0.2, cwd=str(tmp_path)),
        )
    assert CANARY not in "".join(traceback.format_exception(caught.value))
    # TimeoutExpired holds the argv (with the canary): it must not ride along as __context__.
    assert caught.value.__context__ is None
