"""The pure core opens no file, socket or process and reads no environment (audit hook)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    # Pre-import the stdlib the core uses, so only the core's own behaviour is audited.
    import collections.abc, dataclasses, datetime, json, math, os, re, typing  # noqa
    FORBIDDEN = ("open", "socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn",
                 "os.fork", "os.listdir", "os.scandir", "os.putenv", "os.unsetenv", "os.chdir",
                 "os.remove", "os.rename", "os.mkdir", "shutil.", "urllib.", "http.")
    seen = []
    phase = ["import"]
    def hook(event, args):
        if event.startswith(FORBIDDEN):
            path = str(args[0]) if args else ""
            # While importing, the import system reads module files; that is all it may do.
            if phase[0] == "import" and event in ("open", "os.listdir") and path.endswith(
                (".py", ".pyc", "agent_accounts", "__pycache__")
            ):
                return
            seen.append((event, path))
    sys.addaudithook(hook)
    environ_reads = []
    class Spy(dict):
        def __getitem__(self, k):
            environ_reads.append(k); return super().__getitem__(k)
        def get(self, k, d=None):
            environ_reads.append(k); return super().get(k, d)
    os.environ = Spy(os.environ)  # any environment read from here on is recorded
    import agent_accounts as aa
    phase[0] = "calls"
    creds = {"agentOauth": {"accessToken": "sk-ant-oat01-CANARY", "expiresAt": 2e12,
             "refreshToken": "r", "subscriptionType": "max"}}
    state = aa.login_state_from_credentials(creds, 1e12)
    aa.needs_refresh(state, 1e12, 60_000)
    aa.parse_usage_reading({"session_id": "s", "written_at": 1, "rate_limits": {}})
    aa.usage_from_oauth_response({"five_hour": {"utilization": 1, "resets_at": None}}, written_at=1)
    aa.account_label("/x/.agent")
    aa.account_label("/x/.agent-profiles/work", home="/x")
    aa.redact_secrets("token=abc")
    aa.redact_secrets(ValueError("token=abc"))
    state.to_json()
    assert "httpx" not in sys.modules, "the pure core imported httpx"
    assert "agent_accounts.io" not in sys.modules, "the pure core imported its I/O layer"
    print("EVENTS", seen)
    print("ENV", environ_reads)
    """
)


def test_core_does_no_io_and_reads_no_environment() -> None:
    proc = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert eval(lines["EVENTS"]) == []
    assert eval(lines["ENV"]) == []


def test_audit_hook_would_catch_io() -> None:
    """The harness itself sees a file open, so an empty list above means something."""
    probe = SCRIPT.replace('print("EVENTS"', 'open(os.devnull).close(); print("EVENTS"')
    proc = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=False
    )
    assert "'open'" in proc.stdout
