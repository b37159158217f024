"""The MCP conformance suite's authorization-server scenarios against the daemon's remote listener.

`conformance authorization` (tests-integration/node's locked `@modelcontextprotocol/conformance`)
checks the RFC 8414 metadata and runs the authorization code grant with PKCE against the daemon,
over TLS, inside a private network namespace (`unshare -n`, 192.0.2.10 on its lo): nothing binds
or sends outside it. The suite prints the authorization URL and waits for the browser's redirect
on its own 127.0.0.1 callback; the person at the browser is played here on the daemon's own
pages (the consent page, a login code from the token file, Allow), and the redirect is delivered
to the suite's callback. Run as a script (`python THIS WORKDIR`) this file plays the namespace
side and prints the suite's checks as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from local_daemon import (
    Registry,
    RemoteOptions,
    TlsFiles,
    ensure_token_file,
    mint_login_code,
    start_daemon,
)

pytestmark = pytest.mark.slow

THIS = Path(__file__).resolve()
BIN = THIS.parent / "node" / "node_modules" / ".bin"
ADDR = "192.0.2.10"
CALLBACK_PORT = 47613
TIMEOUT = 120


def _registry() -> Registry:
    registry = Registry()

    @registry.command
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return registry


async def _sign_in(http: httpx.AsyncClient, origin: str, auth_url: str, code: str) -> str:
    """Be the person at the browser: consent page, sign in with `code`, Allow; return the
    redirect the browser would follow."""
    opened = await http.get(auth_url)
    consent = httpx.URL(auth_url).join(opened.headers["location"])
    request = consent.params["request"]
    headers = {"Origin": origin}
    signed_in = await http.post(origin + "/auth/login", json={"code": code}, headers=headers)
    signed_in.raise_for_status()
    (await http.get(consent)).raise_for_status()
    decided = await http.post(
        origin + "/auth/consent", json={"request": request, "allow": True}, headers=headers
    )
    decided.raise_for_status()
    redirect: str = decided.json()["data"]["redirect"]
    return redirect


async def _scenario(workdir: Path) -> dict[str, Any]:
    token_file = ensure_token_file(workdir / "token")
    ca = trustme.CA()
    leaf = ca.issue_cert(ADDR)
    cert, key = workdir / "tls.crt", workdir / "tls.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key.write_bytes(leaf.private_key_pem.bytes())
    key.chmod(0o600)
    ca_file = workdir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    remote = RemoteOptions(
        host=ADDR,
        token_file=token_file,
        allowed_hosts=(),
        tls=TlsFiles(cert_file=cert, key_file=key),
    )
    handle = await start_daemon(
        registry=_registry(),
        version="1",
        state_dir=workdir / "state",
        tool_prefix="x",
        remote=remote,
    )
    verify = ssl.create_default_context(cafile=str(ca_file))
    try:
        origin = f"https://{ADDR}:{handle.port}"
        async with httpx.AsyncClient(verify=verify, timeout=30) as http:
            metadata = (await http.get(origin + "/.well-known/oauth-authorization-server")).json()
            redirect_uri = f"http://127.0.0.1:{CALLBACK_PORT}/callback"
            registered = await http.post(
                metadata["registration_endpoint"],
                json={
                    "client_name": "conformance suite",
                    "redirect_uris": [redirect_uri],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                },
            )
            registered.raise_for_status()
            output = workdir / "out"
            suite = await asyncio.create_subprocess_exec(
                str(BIN / "conformance"),
                "authorization",
                "--url",
                metadata["issuer"],
                "--client-id",
                registered.json()["client_id"],
                "--resource",
                origin + "/mcp",
                "--port",
                str(CALLBACK_PORT),
                "--output-dir",
                str(output),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env={
                    **os.environ,
                    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                    "NODE_EXTRA_CA_CERTS": str(ca_file),
                },
            )
            assert suite.stdout is not None
            printed: list[str] = []
            async with asyncio.timeout(TIMEOUT):
                while line := (await suite.stdout.readline()).decode():
                    printed.append(line)
                    if line.startswith(metadata["authorization_endpoint"] + "?"):
                        code = mint_login_code(token_file)
                        redirect = await _sign_in(http, origin, line.strip(), code)
                        # The browser follows the redirect to the suite's callback.
                        async with httpx.AsyncClient(timeout=30) as browser:
                            (await browser.get(redirect)).raise_for_status()
                await suite.wait()
    finally:
        await handle.close()
    checks = [
        check
        for path in sorted(output.glob("**/checks.json"))
        for check in json.loads(path.read_text())
    ]
    return {
        "rc": suite.returncode,
        "checks": {check["id"]: check["status"] for check in checks},
        "printed": "".join(printed)[-3000:],
    }


def main(argv: list[str]) -> int:
    """Run the namespace side and print its observations as JSON."""
    print(json.dumps(asyncio.run(_scenario(Path(argv[0])))), flush=True)
    return 0


def test_authorization_server_scenarios_pass(tmp_path: Path) -> None:
    if not (BIN / "conformance").exists():
        # `make setup` normally does this; never skip, install from the committed lock instead.
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
            cwd=THIS.parent / "node",
            check=True,
            timeout=600,
        )
    script = (
        f"ip link set lo up && ip addr add {ADDR}/32 dev lo && "
        f'exec "{sys.executable}" "{THIS}" "{tmp_path}"'
    )
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT + 60,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    observed = json.loads(lines[-1])
    assert observed["checks"] == {
        "authorization-server-metadata": "SUCCESS",
        "authorization-server-metadata-cimd": "SUCCESS",
        "authorization-code-grant": "SUCCESS",
    }, observed
    assert observed["rc"] == 0, observed
    secret = (tmp_path / "token").read_text()
    assert secret.strip() not in proc.stdout + proc.stderr


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
