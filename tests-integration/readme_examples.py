"""Collect and run the fenced examples of the READMEs and the docs pages, as written.

Rules (the root README's "README examples" paragraph says the same):

- Every fence tagged `python`, `sh`, `bash`, `shell` or `console` is an example. A fence with no
  tag (a synopsis, a layout) is not code.
- `<!-- not-run: <reason> -->` on the line before a fence skips it; the reason is required and
  the test lists every skip by file, line and reason.
- Each README or docs page runs top to bottom in one fresh directory with its own `HOME`, the workspace's
  installed commands first on `PATH` (so `account-cli`, `local-daemon`, `forge-cli` and
  `squash-message` are the installed tools) and no access to the test helpers.
- `python`, `sh`, `bash` and `shell` blocks must exit 0. A block that keeps running is a server:
  it must print the `http://` address it listens on (that is how a reader learns it too); the
  blocks after it run against it, and it is stopped with SIGINT before the next server block or
  at the end of the file, and must then exit 0.
- `console` blocks are sessions: each `$ ` command runs in bash and its output (stdout and
  stderr together) must equal the lines printed under it.
- The forge-automation README and docs page run with the real `gh` logged in to a local forge
  API holding `acme/widgets` (`readme_forge`): their gh examples run as a user's would against
  GitHub.
- The port 8765 the examples use is replaced by a free port, one per README (other programs on a
  shared machine may hold 8765). Nothing else in a block is changed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["Example", "ReadmeRun", "collect", "readmes"]

ROOT = Path(__file__).resolve().parents[1]
LANGS = {"python": "python", "sh": "sh", "bash": "sh", "shell": "sh", "console": "console"}
SKIP = re.compile(r"<!--\s*not-run:\s*(?P<reason>.*?)\s*-->")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
URL = re.compile(r"https?://[^\s/]+:(?P<port>\d+)/")
EXAMPLE_PORT = "8765"
SERVER_WAIT_S = 60.0
BLOCK_TIMEOUT_S = 120.0

Kind = Literal["python", "sh", "console"]


@dataclass(frozen=True, slots=True)
class Example:
    """One fenced block: where it is, its kind, its text, and why it is skipped (if it is)."""

    readme: Path
    line: int
    kind: Kind
    text: str
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.readme.relative_to(ROOT)}:{self.line}"


def readmes() -> list[Path]:
    """The root README, each package's, then each docs page with an example (the guides)."""
    pages = [page for page in sorted(ROOT.glob("docs/**/*.md")) if collect(page)]
    return [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md")), *pages]


def collect(readme: Path) -> list[Example]:
    """Return the README's examples in order."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        start = index
        end = start + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        lang = match.group("lang")
        if lang in LANGS:
            before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
            skip = SKIP.search(before)
            examples.append(
                Example(
                    readme=readme,
                    line=start + 1,
                    kind=LANGS[lang],  # type: ignore[arg-type]
                    text="\n".join(lines[start + 1 : end]) + "\n",
                    skip=skip.group("reason") if skip else None,
                )
            )
        index = end + 1
    return examples


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def console_steps(text: str) -> list[tuple[str, str]]:
    """Split a console session into (command, expected output) pairs."""
    steps: list[tuple[str, list[str]]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if pending is not None:
            pending.append(line)
            if _complete("\n".join(pending)):
                steps.append(("\n".join(pending), []))
                pending = None
            continue
        if line.startswith("$ "):
            pending = [line[2:]]
            if _complete(line[2:]):
                steps.append((line[2:], []))
                pending = None
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first command: {line!r}")
    if pending is not None:
        raise ValueError("unfinished command at the end of the session")
    return [(command, "\n".join(out).rstrip()) for command, out in steps]


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


@dataclass
class _Server:
    example: Example
    process: subprocess.Popen[bytes]
    output: list[str] = field(default_factory=list)
    url: str | None = None
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        with stream:
            for raw in stream:
                line = raw.decode(errors="replace")
                self.output.append(line)
                if self.url is None and (found := URL.search(line)):
                    self.url = found.group(0)

    def drained(self) -> str:
        """Wait (bounded) for the output to end with the process; return all of it."""
        assert self.thread is not None
        self.thread.join(30)
        return "".join(self.output)


class ReadmeRun:
    """One README's examples, run in order in `workdir`."""

    def __init__(
        self, readme: Path, workdir: Path, extra_env: dict[str, str] | None = None
    ) -> None:
        self.readme = readme
        self.workdir = workdir
        self.port = _free_port()
        home = workdir / "home"
        home.mkdir(parents=True, exist_ok=True)
        bin_dir = str(Path(sys.executable).parent)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "PYTHON"))}
        env.update(
            {
                "HOME": str(home),
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "NO_COLOR": "1",
                "COLUMNS": "100",
                **(extra_env or {}),
            }
        )
        self.env = env
        self.server: _Server | None = None
        self.ran: list[Example] = []

    def _text(self, example: Example) -> str:
        return example.text.replace(EXAMPLE_PORT, self.port)

    def _argv(self, example: Example) -> list[str]:
        if example.kind == "python":
            return [sys.executable, "-c", self._text(example)]
        return ["bash", "-euo", "pipefail", "-c", self._text(example)]

    def run(self, example: Example) -> None:
        """Run one example; raise AssertionError naming it when it fails."""
        if example.kind == "console":
            self._console(example)
        else:
            self._script(example)
        self.ran.append(example)

    def _script(self, example: Example) -> None:
        process = subprocess.Popen(
            self._argv(example),
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        server = _Server(example, process)
        server.start()
        deadline = time.monotonic() + BLOCK_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                output = server.drained()
                assert process.returncode == 0, (
                    f"{example.where} exited {process.returncode}:\n{output}"
                )
                return
            if server.url is not None:
                self.stop_server()
                self.server = server
                return
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        raise AssertionError(
            f"{example.where} neither finished nor printed where it listens within"
            f" {BLOCK_TIMEOUT_S:.0f} s:\n{server.drained()}"
        )

    def _console(self, example: Example) -> None:
        for command, expected in console_steps(self._text(example)):
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=BLOCK_TIMEOUT_S,
                check=False,
            )
            got = "\n".join(line.rstrip() for line in result.stdout.decode().splitlines())
            want = "\n".join(line.rstrip() for line in expected.splitlines())
            assert got.rstrip() == want, (
                f"{example.where}: `{command}` printed\n{got}\ninstead of\n{want}"
            )

    def stop_server(self) -> None:
        """SIGINT the running server block, if any; it must exit 0."""
        server, self.server = self.server, None
        if server is None:
            return
        os.killpg(server.process.pid, signal.SIGINT)
        try:
            code = server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=30)
            server.drained()
            raise AssertionError(f"{server.example.where} did not stop on SIGINT") from None
        output = server.drained()
        assert code in (0, -signal.SIGINT, 130), (
            f"{server.example.where} exited {code} on SIGINT:\n{output}"
        )
        assert "Traceback" not in output, f"{server.example.where}:\n{output}"


def examples_of_all() -> Iterator[Example]:
    """Every example of every README."""
    for readme in readmes():
        yield from collect(readme)
