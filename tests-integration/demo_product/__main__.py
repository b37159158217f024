"""`make demo`: the daemon serving the demo product, with its embedded defaults or your own setup.

Defaults need no account, network or forge login: demo profiles in a temporary home, a local usage
server, the real `account-cli poll --write` on a short interval, and a seeded in-memory forge that
moves every few seconds. `--repo OWNER/NAME` reads a real repository through `gh` instead, and
`--real-accounts` reads your own profiles (and polls nothing: your own timer does that).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent_accounts.io import Profile, discover_profiles
from forge_automation import forge_port, gh_cli_wire
from local_daemon import DaemonPortInUseError, mount_static_app, start_daemon

from .forge_seed import DEMO_REPO, seed_forge
from .product import build_registry
from .seed import seed_demo_home
from .usage_server import start_usage_server

STATIC_ROOT = Path(__file__).resolve().parent / "static"
VERSION = "demo-1"
log = logging.getLogger("demo_product")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765, help="loopback port (0: any free port)")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between polls")
    parser.add_argument("--repo", help="read OWNER/NAME through your logged-in gh instead")
    parser.add_argument("--real-accounts", action="store_true", help="show your own profiles")
    parser.add_argument("--ready-file", help="write {url, pid} here once serving (for tests)")
    return parser.parse_args(argv)


def _account_cli() -> str:
    found = shutil.which("account-cli", path=os.path.dirname(sys.executable)) or shutil.which(
        "account-cli"
    )
    if found is None:
        raise SystemExit("account-cli is not installed next to this Python (run `make setup`)")
    return found


async def _poll_forever(env: dict[str, str], interval: float) -> None:
    """Run the real `account-cli poll --write` every `interval` seconds."""
    cli = _account_cli()
    while True:
        proc = await asyncio.create_subprocess_exec(
            cli,
            "poll",
            "--write",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await proc.wait()
        await asyncio.sleep(interval)


async def _move_forge_forever(advance: Callable[[], str], marker: Path, interval: float) -> None:
    """Play the demo forge's next move, then touch a file the daemon watches so pages refresh."""
    while True:
        await asyncio.sleep(interval)
        what = advance()
        marker.write_text(json.dumps({"last": what}), encoding="utf-8")
        log.info("forge: %s", what)


async def run(args: argparse.Namespace) -> None:
    """Start everything, serve until SIGINT/SIGTERM, then stop everything and remove the temp dir."""
    workdir = Path(tempfile.mkdtemp(prefix="agent-plumbing-demo-"))
    tasks: list[asyncio.Task[None]] = []
    usage_server = None
    handle = None
    try:
        if args.real_accounts:
            profiles_of: Callable[[], list[Profile]] = discover_profiles
            watch_root = str(workdir)
        else:
            demo_home = seed_demo_home(workdir / "home")
            base_loads = {token: 20.0 + 25 * i for i, token in enumerate(demo_home.tokens.values())}
            usage_server = await start_usage_server(base_loads)
            env = {
                **os.environ,
                "HOME": str(demo_home.home),
                "AGENT_API_BASE_URL": usage_server.base_url,
            }
            env.pop("AGENT_CONFIG_DIRS", None)
            env.pop("AGENT_PROFILE_ROOT", None)

            def profiles_of() -> list[Profile]:
                return discover_profiles(home=demo_home.home, env={})

            watch_root = str(workdir)
            tasks.append(asyncio.create_task(_poll_forever(env, args.interval)))
        if args.repo:
            port = forge_port(gh_cli_wire())
            repo = args.repo
        else:
            demo_forge = seed_forge()
            port = forge_port(demo_forge.forge.wire)
            repo = DEMO_REPO
            marker = workdir / "forge-state.json"
            tasks.append(
                asyncio.create_task(
                    _move_forge_forever(demo_forge.advance, marker, max(args.interval * 2, 4.0))
                )
            )
        registry = build_registry(port=port, repo=repo, profiles=profiles_of)
        handle = await start_daemon(
            registry=registry,
            version=VERSION,
            state_dir=str(workdir / "state"),
            port=args.port,
            tool_prefix="demo",
            watch_root=watch_root,
            mount_routes=lambda app: mount_static_app(app, root=STATIC_ROOT),
        )
        url = f"http://127.0.0.1:{handle.port}/"
        print(f"demo: serving {url}  (repo {repo}; Ctrl-C stops and cleans up)", flush=True)
        if args.ready_file:
            Path(args.ready_file).write_text(
                json.dumps({"url": url, "pid": os.getpid(), "workdir": str(workdir)}),
                encoding="utf-8",
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        print("demo: stopping", flush=True)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if handle is not None:
            await handle.close()
        if usage_server is not None:
            await usage_server.close()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """Run the demo."""
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # one line per batch is noise here
    args = _parse(argv)
    try:
        asyncio.run(run(args))
    except DaemonPortInUseError as exc:
        # One line and the way out, not a traceback.
        raise SystemExit(
            f'demo: port {exc.port} is in use; pick another: make demo ARGS="--port N"'
            " (--port 0 picks a free one)"
        ) from None


if __name__ == "__main__":
    main()
