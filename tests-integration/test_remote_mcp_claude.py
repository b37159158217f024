"""Claude Code reaches `/mcp` on the real `local-daemon serve --remote-host` with a bearer, over TLS.

Run as a script (`python test_remote_mcp_claude.py WORKDIR`) inside `unshare -n`, where 192.0.2.10
sits on lo: the daemon's remote listener binds it with a trustme certificate that Node trusts
through NODE_EXTRA_CA_CERTS, and `claude mcp list` (offline, scratch HOME) connects with the
bearer, is turned away with a wrong one, and sees a server that needs sign-in (OAuth) without one. Nothing binds or sends outside the
namespace the test made. Slow for a test (Node starts Claude Code once per command, ~15 s in all):
it is the one check that a stock MCP host, not our own client code, works against the remote gate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
THIS = Path(__file__).resolve()
BIN = HERE / "node" / "node_modules" / ".bin"
ADDR = "192.0.2.10"
NAME = "box.test"
TIMEOUT = 180

pytestmark = pytest.mark.slow


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _claude(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "claude"), *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def _scenario(workdir: Path) -> dict[str, Any]:
    """The namespace side: serve, add three servers to Claude Code, list them, stop."""
    import trustme

    from integration_support import served_port
    from local_daemon import ensure_token_file

    token = ensure_token_file(workdir / "token")
    secret = token.read_text().strip()
    ca = trustme.CA()
    leaf = ca.issue_cert(ADDR, NAME)
    (workdir / "ca.pem").write_bytes(ca.cert_pem.bytes())
    cert, key = workdir / "tls.crt", workdir / "tls.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    _write_private(key, leaf.private_key_pem.bytes())
    state = workdir / "state"
    argv = [sys.executable, "-m", "local_daemon.cli", "serve", "mcp_clients_product:registry"]
    argv += ["--state-dir", str(state), "--tool-prefix", "", "--remote-host", ADDR]
    argv += ["--token-file", str(token), "--tls-cert", str(cert), "--tls-key", str(key)]
    argv += ["--remote-allowed-host", NAME, "--log-level", "debug"]
    log = workdir / "daemon.log"
    with log.open("wb") as output:
        daemon = subprocess.Popen(
            argv,
            cwd=HERE,
            env={**os.environ, "PYTHONPATH": str(HERE)},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"https://{ADDR}:{served_port(state, daemon, log=log)}/mcp"
        home = workdir / "home"
        home.mkdir()
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(home),
            "NODE_EXTRA_CA_CERTS": str(workdir / "ca.pem"),
            # Claude Code, offline: no updater, telemetry, error reports or other traffic.
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_COLOR": "1",
            "MCP_TIMEOUT": "120000",
            "CI": "true",
        }
        added = []
        for name, header in (
            ("with-bearer", f"Authorization: Bearer {secret}"),
            ("wrong-bearer", "Authorization: Bearer not-the-secret"),
            ("signs-in", None),  # a stock client with nothing: it must see a sign-in, not a failure
        ):
            add = ["mcp", "add", "--transport", "http", name, url]
            if header is not None:
                add += ["--header", header]
            result = _claude(add, env, workdir)
            added.append(result.returncode)
        listed = _claude(["mcp", "list"], env, workdir)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=30)
    lines = {line.split(":", 1)[0]: line for line in listed.stdout.splitlines() if ":" in line}
    daemon_output = log.read_text(errors="replace")
    return {
        "added": added,
        "lines": {
            name: lines.get(name, "") for name in ("with-bearer", "wrong-bearer", "signs-in")
        },
        "list_output": listed.stdout[-2000:] + listed.stderr[-2000:],
        "daemon_exit": daemon.returncode,
        "daemon_leaked": secret in daemon_output,
        "daemon_served": "serving http://" in daemon_output,
    }


def test_claude_code_connects_to_remote_mcp_with_the_bearer_only(tmp_path: Path) -> None:
    if not (BIN / "claude").exists():
        # `make setup` normally does this; never skip, install from the committed lock instead.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
            cwd=HERE / "node",
            check=True,
            timeout=600,
        )
    from netns_support import observe_in_namespace  # the namespace side runs without it

    obs = observe_in_namespace(
        [sys.executable, str(THIS), str(tmp_path)],
        secret_files=[tmp_path / "token"],
        timeout=TIMEOUT * 2,
    )
    assert obs["added"] == [0, 0, 0]
    assert obs["daemon_served"] is True
    assert obs["daemon_exit"] == 0
    assert "Connected" in obs["lines"]["with-bearer"], obs["list_output"]
    assert "Connected" not in obs["lines"]["wrong-bearer"], obs["list_output"]
    # The 401 names the daemon's OAuth metadata (RFC 9728): Claude Code offers to sign in.
    assert "Needs authentication" in obs["lines"]["signs-in"], obs["list_output"]
    assert obs["daemon_leaked"] is False


if __name__ == "__main__":
    print(json.dumps(_scenario(Path(sys.argv[1]))), flush=True)
