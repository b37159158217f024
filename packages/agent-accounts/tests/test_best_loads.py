"""What `account-cli best` and `run` load: they run before an agent starts, over every profile."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from accounts_support import env_without_profiles, make_profile

# --- what the command loads ---------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import sys
    # PRELOAD
    sys.argv = ["account-cli", *sys.argv[1:]]
    from agent_accounts.cli import main
    try:
        main()
    except SystemExit as done:
        code = done.code
    loaded = sorted(sys.modules)
    import json
    sys.stderr.write(json.dumps({"code": code, "modules": loaded}))
    """
)
HEAVY = {"typing", "dataclasses", "inspect", "httpx", "asyncio", "shutil", "importlib.metadata"}


def test_best_loads_neither_typing_nor_dataclasses_nor_httpx() -> None:
    # A short home of plain segments (pytest's tmp_path has a long one): printed without `re`.
    with tempfile.TemporaryDirectory(prefix="best", dir="/tmp") as tmp:
        _probe_best(Path(tmp))


def _probe_best(tmp_path: Path) -> None:
    now = time.time()
    for name, used in (("a", 50.0), ("b", 10.0)):
        profile, _ = make_profile(tmp_path / ".agent-profiles", name, now=now)
        sessions = Path(profile.config_dir) / "status-cache" / "sessions"
        sessions.mkdir(parents=True, mode=0o700)
        doc = {
            "session_id": "usage-poll",
            "written_at": now - 5,
            "rate_limits": {
                "five_hour": {"used_percentage": used, "resets_at": now + 3600},
                "seven_day": {"used_percentage": used, "resets_at": now + 86400},
            },
        }
        (sessions / "usage-poll.json").write_text(json.dumps(doc))
    env = env_without_profiles(tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith(("COV", "PYTHON"))}
    for args, out in ((["best"], "b\n"), (["best", "--path"], f"{tmp_path}/.agent-profiles/b\n")):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        result = json.loads(done.stderr)
        assert (result["code"], done.stdout) == (0, out)
        assert set(result["modules"]) & HEAVY == set()
    # `run` ranks by the same code; with every account past its line it returns (75) instead of
    # exec'ing, so the probe sees what it loaded.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "--switch-at", "5", "--", "true"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result = json.loads(done.stderr[done.stderr.index("{") :])
    assert result["code"] == 75
    assert set(result["modules"]) & HEAVY == set()


def test_the_probe_sees_a_heavy_import(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("# PRELOAD", "import dataclasses"), "best"],
        env=env_without_profiles(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0  # the probe's own exit; the CLI's code is in the JSON
    assert '"dataclasses"' in done.stderr
