"""Import and CLI smoke tests for one package installed at its lowest declared direct versions.

`.ci/floors` installs each package alone into a scratch venv with
`uv pip install --resolution lowest-direct` and runs this file with that venv's Python:
`python floor_smoke.py <package>`. Standard library only (pytest is not in that venv); every
check runs the package's real code or its installed command, and the first failure exits 1.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BIN = Path(sys.executable).parent


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok ' if ok else 'FAIL'} {what}{'' if ok else f': {detail}'}", flush=True)
    if not ok:
        raise SystemExit(1)


def run(*argv: str, env: dict[str, str] | None = None, stdin: str = "") -> tuple[int, str]:
    proc = subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout + proc.stderr


def every_public_name(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    check(f"import {module_name} and its {len(module.__all__)} public names", not missing, missing)
    # Every module of the package, private ones included: a name missing from an old dependency
    # fails at import, wherever it is used.
    names = [info.name for info in pkgutil.walk_packages(module.__path__, f"{module_name}.")]
    for name in names:
        importlib.import_module(name)
    check(f"import the {len(names)} modules under {module_name}", True)


def _usage_server() -> ThreadingHTTPServer:
    body = json.dumps(
        {
            "five_hour": {"utilization": 23.0, "resets_at": "2030-01-01T05:00:00Z"},
            "seven_day": {"utilization": 41.5, "resets_at": None},
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def agent_accounts(tmp: Path) -> None:
    every_public_name("agent_accounts")
    every_public_name("agent_accounts.io")
    code, out = run("account-cli", "-h")
    check("account-cli -h", code == 0 and "poll" in out, out)
    home = tmp / "home"
    home.mkdir()
    code, out = run("account-cli", "status", env={"HOME": str(home)})
    check("account-cli status without profiles", code == 0 and "no profiles found" in out, out)
    config = home / ".agent"
    config.mkdir(mode=0o700)
    creds = config / ".credentials.json"
    expires = int(time.time() * 1000) + 86_400_000
    creds.write_text(
        json.dumps({"agentOauth": {"accessToken": "sk-ant-oat01-floor", "expiresAt": expires}})
    )
    creds.chmod(0o600)
    server = _usage_server()
    try:
        env = {"HOME": str(home), "AGENT_API_BASE_URL": f"http://127.0.0.1:{server.server_port}"}
        code, out = run("account-cli", "poll", "--write", env=env)
    finally:
        server.shutdown()
    check("account-cli poll --write through httpx", code == 0 and "five_hour 23%" in out, out)
    code, out = run("account-cli", "status", "--statusline", env={"HOME": str(home)})
    check("account-cli status --statusline", code == 0 and out.startswith("23|41|"), out)


REGISTRY = '''
from local_daemon import Registry

registry = Registry()


@registry.command
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"
'''


def local_daemon(tmp: Path) -> None:
    every_public_name("local_daemon")  # the lazy MCP names import mcp here
    code, out = run("local-daemon", "-h")
    check("local-daemon -h", code == 0 and "serve" in out, out)
    (tmp / "floorapp.py").write_text(REGISTRY)
    proc = subprocess.Popen(
        [str(BIN / "local-daemon"), "serve", "floorapp:registry", "--state-dir", str(tmp / "s"),
         "--tool-prefix", "floor", "--watch-root", str(tmp)],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = ""
        for line in proc.stderr:  # bounded by the daemon: it logs once ready, or exits
            if "serving http://" in line:
                break
        check("local-daemon serve logs where it listens", "serving http://" in line, line)
        url = line.split("serving ", 1)[1].split()[0]
        code, out = run("local-daemon", "health", "--port", url.rsplit(":", 1)[1].strip("/"))
        check("local-daemon health", code == 0 and '"ok": true' in out, out)
        request = urllib.request.Request(
            f"{url}rpc/greet",
            data=b'{"name": "floor"}',
            headers={"content-type": "application/json", "x-local-client": "floor"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = json.loads(answer.read())
        check("POST /rpc/greet", body == {"ok": True, "data": "hello floor"}, body)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    check("local-daemon serve exits 0 on SIGTERM", proc.returncode == 0, proc.returncode)
    from local_daemon import Registry, list_tools

    registry = Registry()

    @registry.command
    def ping() -> str:
        """Answer pong."""
        return "pong"

    names = [tool.name for tool in list_tools(registry, tool_prefix="floor")]
    check("mcp list_tools", names == ["floor_ping"], names)


def forge_automation(tmp: Path) -> None:
    every_public_name("forge_automation")
    code, out = run("forge-cli", "--help")
    check("forge-cli --help", code == 0 and "pr-status" in out, out)
    message = {"title": "T", "body": "", "prNumber": 1, "taskIds": [], "commits": []}
    code, out = run("squash-message", stdin=json.dumps(message))
    check("squash-message", code == 0 and json.loads(out)["subject"] == "T (#1)", out)
    from forge_automation import fake_forge, forge_port

    forge = fake_forge()
    sha = forge.add_commit("a" * 40, message="base")
    forge.set_branch("o/r", "main", sha, default=True)
    result = forge_port(forge.wire).ensure_branch("o/r", "topic", sha)
    check("fake forge ensure_branch", result.done, result)


CHECKS = {
    "agent-accounts": agent_accounts,
    "local-daemon": local_daemon,
    "forge-automation": forge_automation,
}

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        CHECKS[sys.argv[1]](Path(scratch))
