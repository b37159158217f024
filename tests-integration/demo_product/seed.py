"""Demo profiles in a temporary home: credentials files with synthetic tokens, mode 0600."""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DemoHome", "seed_demo_home"]

DEMO_PROFILES = ("work", "personal")


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoHome:
    """A seeded home: its path, the profile root and each profile's access token."""

    home: Path
    profile_root: Path
    tokens: dict[str, str]


def _write_credentials(config_dir: Path, token: str, *, subscription: str) -> None:
    config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = {
        "agentOauth": {
            "accessToken": token,
            "refreshToken": "demo-refresh-" + secrets.token_urlsafe(24),
            "expiresAt": int(time.time() * 1000) + 8 * 3600 * 1000,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": subscription,
        }
    }
    path = config_dir / ".credentials.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(body, fh, indent=2)


def seed_demo_home(home: Path) -> DemoHome:
    """Create the default profile and two named profiles under `home`."""
    profile_root = home / ".agent-profiles"
    tokens: dict[str, str] = {}
    dirs = {"default": home / ".agent"} | {name: profile_root / name for name in DEMO_PROFILES}
    for index, (label, config_dir) in enumerate(dirs.items()):
        token = f"demo-{label}-" + secrets.token_urlsafe(24)
        _write_credentials(config_dir, token, subscription=("pro", "max", "team")[index % 3])
        tokens[label] = token
    return DemoHome(home=home, profile_root=profile_root, tokens=tokens)
