"""The three distributions as a user gets them: built once, each wheel installed alone with plain pip.

One session build (`uv build --all-packages --no-sources`) feeds every test; three fresh virtualenvs
are filled in parallel by `<venv>/bin/pip install <wheel>` with dependencies from the package index,
never from the workspace. `make publish` runs for real against a loopback upload server.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import urllib.parse
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
UV = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dist:
    name: str
    module: str
    scripts: frozenset[str]
    # Distributions that must not arrive with this one when it is installed alone.
    forbidden: frozenset[str]

    @property
    def version(self) -> str:
        pyproject = ROOT / "packages" / self.name / "pyproject.toml"
        version = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
        assert isinstance(version, str)
        return version

    @property
    def wheel(self) -> str:
        return f"{self.module}-{self.version}-py3-none-any.whl"

    @property
    def sdist(self) -> str:
        return f"{self.module}-{self.version}.tar.gz"


# Reserved or documentation-only names (RFC 2606, RFC 6761): never a project's real home.
PLACEHOLDER_HOSTS = (".invalid", ".example", ".test", ".localhost", "example.com", "example.org")

WORKSPACE = frozenset({"agent-accounts", "local-daemon", "forge-automation"})
DISTS = {
    d.name: d
    for d in (
        Dist(
            name="agent-accounts",
            module="agent_accounts",
            scripts=frozenset({"account-cli"}),
            forbidden=frozenset({"aiohttp", "mcp"}) | (WORKSPACE - {"agent-accounts"}),
        ),
        Dist(
            name="local-daemon",
            module="local_daemon",
            scripts=frozenset({"local-daemon"}),
            forbidden=WORKSPACE - {"local-daemon"},
        ),
        Dist(
            name="forge-automation",
            module="forge_automation",
            scripts=frozenset({"forge-cli", "squash-message"}),
            forbidden=frozenset({"httpx", "aiohttp"}) | (WORKSPACE - {"forge-automation"}),
        ),
    )
}


# The distributions that ship systemd user units: the command that installs them, and the units
# (each the same bytes as the repository's systemd/).
UNITS = {
    "agent-accounts": (
        "account-cli",
        ("account-poll-failed@.service", "account-poll.service", "account-poll.timer"),
    ),
    "local-daemon": ("local-daemon", ("local-daemon.service", "local-daemon.socket")),
}


def _run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: int = 60,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        input=stdin,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def packaging_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the three wheels and three sdists once per session, as `make build` does."""
    out = tmp_path_factory.mktemp("packaging-dist")
    proc = _run([UV, "build", "--all-packages", "--no-sources", "--out-dir", str(out)], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _install_alone(wheel: Path, venv: Path) -> None:
    made = _run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    # --no-compile: byte-compiling aiohttp, mcp and pydantic is most of the CPU an install costs;
    # what is checked here (dependencies, scripts, a real command) does not depend on it.
    pip = _run(
        [str(venv / "bin" / "pip"), "install", "--no-input", "--no-compile", str(wheel)],
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]


@pytest.fixture(scope="session")
def packaging_venvs(
    packaging_dist: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """One fresh virtualenv per distribution holding that wheel alone (installed in parallel)."""
    root = tmp_path_factory.mktemp("packaging-venvs")
    venvs = {name: root / name for name in DISTS}
    with ThreadPoolExecutor(max_workers=len(DISTS)) as pool:
        futures = [
            pool.submit(_install_alone, packaging_dist / dist.wheel, venvs[name])
            for name, dist in DISTS.items()
        ]
        for future in futures:
            future.result()
    return venvs


def _isolated_env(home: Path) -> dict[str, str]:
    """A user environment with an empty home: nothing of this machine's agent state leaks in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENT_", "VIRTUAL_ENV", "PYTHON", "UV_", "GH_", "GITHUB_"))
    }
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    return env


# --- the build ------------------------------------------------------------------------------


def test_build_makes_three_wheels_and_three_sdists(packaging_dist: Path) -> None:
    built = sorted(p.name for p in packaging_dist.iterdir() if not p.name.startswith("."))
    assert built == sorted([d.wheel for d in DISTS.values()] + [d.sdist for d in DISTS.values()])


def test_versions_are_independent_and_bumped_per_package() -> None:
    # The documented bump, dry: it names one package and writes nothing.
    before = {
        p: p.read_bytes() for p in [ROOT / "uv.lock", *ROOT.glob("packages/*/pyproject.toml")]
    }
    dist = DISTS["forge-automation"]
    proc = _run([UV, "version", "--package", dist.name, "--bump", "minor", "--dry-run", "--frozen"])
    assert proc.returncode == 0, proc.stderr
    major, minor, _patch = (int(part) for part in dist.version.split("."))
    assert proc.stdout.strip() == f"{dist.name} {dist.version} => {major}.{minor + 1}.0"
    assert {p: p.read_bytes() for p in before} == before
    # Each distribution keeps its own version in its own pyproject (no shared dynamic version).
    for name, each in DISTS.items():
        shown = _run([UV, "version", "--package", name, "--short", "--frozen"])
        assert shown.stdout.strip() == each.version, shown.stderr


@pytest.mark.parametrize("name", sorted(DISTS))
def test_wheel_carries_what_a_publisher_needs(packaging_dist: Path, name: str) -> None:
    dist = DISTS[name]
    info = f"{dist.module}-{dist.version}.dist-info"
    with zipfile.ZipFile(packaging_dist / dist.wheel) as wheel:
        files = set(wheel.namelist())
        metadata = email.parser.Parser(policy=email.policy.compat32).parsestr(
            wheel.read(f"{info}/METADATA").decode("utf-8")
        )
        entry_points = wheel.read(f"{info}/entry_points.txt").decode("utf-8")
    assert f"{dist.module}/py.typed" in files
    assert f"{dist.module}/__init__.py" in files
    # Only its own import package: no tests, no sibling package, nothing from the workspace root.
    assert {f.split("/")[0] for f in files} == {dist.module, info}
    assert metadata["Name"] == name
    assert metadata["Version"] == dist.version
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    assert f"{info}/licenses/LICENSE" in files
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert str(metadata.get_payload()).startswith(f"# {name}\n")
    # Real project URLs or none: the project has no public home yet, so none; a placeholder
    # (example.invalid and the like) would send PyPI readers nowhere.
    for url in metadata.get_all("Project-URL", []):
        host = urllib.parse.urlsplit(url.split(", ", 1)[1]).hostname or ""
        assert url.split(", ", 1)[1].startswith("https://"), url
        assert not host.endswith(PLACEHOLDER_HOSTS), url
    classifiers = set(metadata.get_all("Classifier", []))
    assert {
        "Typing :: Typed",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",
        "Operating System :: POSIX :: Linux",
    } <= classifiers
    requires = {
        r.split(">")[0].split("=")[0].split("<")[0].strip().lower()
        for r in metadata.get_all("Requires-Dist", [])
    }
    assert not requires & dist.forbidden
    scripts = {
        line.split("=")[0].strip()
        for line in entry_points.split("[console_scripts]")[1].splitlines()
        if "=" in line
    }
    assert scripts == dist.scripts


@pytest.mark.parametrize("name", sorted(DISTS))
def test_sdist_carries_readme_license_and_changelog(packaging_dist: Path, name: str) -> None:
    dist = DISTS[name]
    top = dist.sdist.removesuffix(".tar.gz")
    with tarfile.open(packaging_dist / dist.sdist) as sdist:
        for member in ("README.md", "LICENSE", "CHANGELOG.md"):
            shipped = sdist.extractfile(f"{top}/{member}")
            assert shipped is not None, member
            assert shipped.read() == (ROOT / "packages" / name / member).read_bytes(), member
        # The units ride in the sdist too (inside the import package, as in the wheel).
        for unit in UNITS.get(name, ("", ()))[1]:
            shipped = sdist.extractfile(f"{top}/src/{dist.module}/units/{unit}")
            assert shipped is not None, unit
            assert shipped.read() == (ROOT / "systemd" / unit).read_bytes(), unit


def test_twine_check_passes_on_all_six(packaging_dist: Path) -> None:
    artifacts = sorted(str(p) for p in packaging_dist.iterdir() if not p.name.startswith("."))
    assert len(artifacts) == 6
    proc = _run([sys.executable, "-m", "twine", "check", "--strict", *artifacts], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 6


# --- each wheel alone -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DISTS))
def test_wheel_installs_alone_without_the_other_stacks(
    packaging_venvs: dict[str, Path], name: str
) -> None:
    dist = DISTS[name]
    venv = packaging_venvs[name]
    listed = _run([str(venv / "bin" / "pip"), "list", "--format=json"])
    assert listed.returncode == 0, listed.stderr
    installed = {
        row["name"].lower().replace("_", "-"): row["version"] for row in json.loads(listed.stdout)
    }
    assert installed[name] == dist.version
    assert not set(installed) & dist.forbidden, sorted(set(installed) & dist.forbidden)
    checked = _run([str(venv / "bin" / "pip"), "check"])
    assert checked.returncode == 0, checked.stdout
    for script in dist.scripts:
        assert (venv / "bin" / script).is_file(), script
    # Importable from the venv alone, py.typed next to it.
    shown = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            f"import {dist.module}, pathlib; print(pathlib.Path({dist.module}.__file__).parent)",
        ]
    )
    assert shown.returncode == 0, shown.stderr
    package_dir = Path(shown.stdout.strip())
    assert package_dir.is_relative_to(venv)
    assert (package_dir / "py.typed").is_file()


def test_account_cli_status_json_from_its_wheel(
    packaging_venvs: dict[str, Path], tmp_path: Path
) -> None:
    cli = str(packaging_venvs["agent-accounts"] / "bin" / "account-cli")
    home = tmp_path / "home"
    home.mkdir()
    env = _isolated_env(home)
    # An empty home: no profile, so every profile (none) succeeded.
    empty = _run([cli, "status", "--json"], env=env)
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == {"profiles": []}
    # The default dir without credentials: one profile whose login is missing, exit 2.
    (home / ".agent").mkdir()
    missing = _run([cli, "status", "--json"], env=env)
    assert missing.returncode == 2, missing.stderr
    profiles = json.loads(missing.stdout)["profiles"]
    assert [(p["configDir"], p["login"], p["usage"]) for p in profiles] == [
        (str(home / ".agent"), {"status": "missing"}, None)
    ]


def test_account_cli_human_status_line_from_its_wheel(
    packaging_venvs: dict[str, Path], tmp_path: Path
) -> None:
    # A newcomer's first status line: the tee keeps the agent client's reading and prints the
    # line a person reads; `statusline` then shows the same from the kept reading.
    cli = str(packaging_venvs["agent-accounts"] / "bin" / "account-cli")
    home = tmp_path / "home"
    (home / ".agent").mkdir(parents=True, mode=0o700)
    env = _isolated_env(home)
    now = time.time()
    payload = {
        "session_id": "3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b",
        "rate_limits": {
            # 2 h less 30 s, and 2 d 30 min ahead: the countdowns read 2h and 2d1h however long
            # the child takes to start (each is rounded up to the unit it shows).
            "five_hour": {"used_percentage": 61, "resets_at": now + 2 * 3600 - 30},
            "seven_day": {"used_percentage": 85.5, "resets_at": now + 2 * 86400 + 1800},
        },
    }
    tee = _run([cli, "statusline-tee", "--no-color"], env=env, stdin=json.dumps(payload))
    assert (tee.returncode, tee.stderr) == (0, ""), tee.stderr
    assert tee.stdout == "5h 61% 2h · 7d 85% 2d1h\n"
    line = _run([cli, "statusline", "--no-color"], env=env)
    assert (line.returncode, line.stdout) == (0, "5h 61% 2h · 7d 85% 2d1h\n"), line.stderr


@pytest.mark.parametrize("name", sorted(UNITS))
def test_units_install_dry_run_from_the_wheel_alone(
    packaging_dist: Path, packaging_venvs: dict[str, Path], tmp_path: Path, name: str
) -> None:
    # What a PyPI user has: the wheel, no systemd/ dir. The units ride in the wheel, the same
    # bytes as the repository's systemd/, and `units install --dry-run` finds them there.
    dist = DISTS[name]
    command, units = UNITS[name]
    with zipfile.ZipFile(packaging_dist / dist.wheel) as wheel:
        for unit in units:
            shipped = wheel.read(f"{dist.module}/units/{unit}")
            assert shipped == (ROOT / "systemd" / unit).read_bytes(), unit
    env = _isolated_env(tmp_path)
    shown = _run(
        [str(packaging_venvs[name] / "bin" / command), "units", "install", "--dry-run"], env=env
    )
    assert shown.returncode == 0, shown.stderr
    unit_dir = tmp_path / ".config" / "systemd" / "user"
    planned = shown.stdout.splitlines()[: len(units)]
    assert sorted(planned) == [f"would write {unit_dir / unit}" for unit in units]
    assert "systemctl --user enable --now" in shown.stdout
    assert not (tmp_path / ".config").exists()


def test_local_daemon_cli_mints_a_login_code_from_its_wheel(
    packaging_venvs: dict[str, Path], tmp_path: Path
) -> None:
    cli = str(packaging_venvs["local-daemon"] / "bin" / "local-daemon")
    env = _isolated_env(tmp_path)
    shown = _run([cli, "--help"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "token" in shown.stdout
    token = tmp_path / "tok"
    ensured = _run([cli, "token", "ensure", str(token)], env=env)
    assert ensured.returncode == 0, ensured.stderr
    assert token.stat().st_mode & 0o777 == 0o600
    secret = token.read_text(encoding="utf-8").strip()
    code = _run([cli, "token", "login-code", str(token)], env=env)
    assert code.returncode == 0, code.stderr
    assert code.stdout.strip().startswith("v1.")
    assert secret not in code.stdout + code.stderr + ensured.stdout + ensured.stderr


def test_forge_cli_and_squash_message_run_from_their_wheel(
    packaging_venvs: dict[str, Path], tmp_path: Path
) -> None:
    bin_dir = packaging_venvs["forge-automation"] / "bin"
    env = _isolated_env(tmp_path)
    shown = _run([str(bin_dir / "forge-cli"), "--help"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "pr-status" in shown.stdout
    request = {
        "title": "Add retry",
        "body": "Retries the call.",
        "prNumber": 12,
        "taskIds": ["T-7"],
        "commits": [{"subject": "Add backoff", "body": "Wraps\nthe call."}],
    }
    squashed = _run([str(bin_dir / "squash-message")], env=env, stdin=json.dumps(request))
    assert squashed.returncode == 0, squashed.stderr
    assert json.loads(squashed.stdout) == {
        "subject": "Add retry (T-7) (#12)",
        "body": (
            "## Summary\n\nRetries the call.\n\n## Changes\n\n- **Add backoff.** Wraps the call."
            "\n\nRefs: T-7, #12"
        ),
    }
    refused = _run([str(bin_dir / "squash-message")], env=env, stdin="{")
    assert refused.returncode == 65
    assert "Traceback" not in refused.stderr


# --- make publish ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    path: str
    authorization: str
    content_type: str
    body: bytes


class _UploadServer(ThreadingHTTPServer):
    uploads: list[Upload]


class _UploadHandler(BaseHTTPRequestHandler):
    server: _UploadServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.server.uploads.append(
            Upload(
                path=self.path,
                authorization=self.headers.get("Authorization", ""),
                content_type=self.headers.get("Content-Type", ""),
                body=self.rfile.read(length),
            )
        )
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def upload_server() -> Iterator[_UploadServer]:
    """A loopback stand-in for an index's upload endpoint that records every request."""
    server = _UploadServer(("127.0.0.1", 0), _UploadHandler)
    server.uploads = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


CANARY_TOKEN = "pypi-CANARYpublishTOKEN0123456789abcdef"


def _publish(server: _UploadServer, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_PUBLISH_", "MAKE"))}
    env["UV_PUBLISH_URL"] = f"http://127.0.0.1:{server.server_address[1]}/legacy/"
    env["UV_PUBLISH_TOKEN"] = CANARY_TOKEN
    env["NO_PROXY"] = "127.0.0.1"
    # `-o setup`: the environment is already synced; publish itself is what is under test.
    argv = ["make", "--no-print-directory", "-o", "setup", "publish", f"DIST={out}", *extra]
    return _run(argv, env=env, timeout=300)


def test_make_publish_dry_run_builds_one_package_and_uploads_nothing(
    upload_server: _UploadServer, tmp_path: Path
) -> None:
    dist = DISTS["forge-automation"]
    proc = _publish(upload_server, tmp_path, f"PKG={dist.name}", "DRY_RUN=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    built = sorted(p.name for p in (tmp_path / dist.name).iterdir() if not p.name.startswith("."))
    assert built == sorted([dist.wheel, dist.sdist])
    assert [p.name for p in tmp_path.iterdir()] == [dist.name]
    assert proc.stdout.count("PASSED") == 2  # twine check ran on both
    assert "dry run: nothing uploaded" in proc.stdout
    assert dist.wheel in proc.stdout
    assert dist.sdist in proc.stdout
    assert upload_server.uploads == []
    assert CANARY_TOKEN not in proc.stdout + proc.stderr


def test_make_publish_uploads_wheel_and_sdist_to_the_configured_index(
    upload_server: _UploadServer, tmp_path: Path
) -> None:
    # The same target without DRY_RUN, aimed by UV_PUBLISH_URL at the loopback recorder.
    dist = DISTS["forge-automation"]
    proc = _publish(upload_server, tmp_path, f"PKG={dist.name}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert CANARY_TOKEN not in proc.stdout + proc.stderr
    expected_auth = "Basic " + base64.b64encode(f"__token__:{CANARY_TOKEN}".encode()).decode()
    seen: dict[str, str] = {}
    for upload in upload_server.uploads:
        assert upload.path == "/legacy/"
        assert upload.authorization == expected_auth
        form = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {upload.content_type}\r\n\r\n".encode() + upload.body
        )
        fields: dict[str, bytes] = {}
        filename = ""
        for part in form.iter_parts():
            key = part.get_param("name", header="content-disposition")
            assert isinstance(key, str)
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            fields[key] = payload
            if key == "content":
                filename = str(part.get_filename())
        assert fields["name"].decode() in {dist.name, dist.module}
        assert fields["version"].decode() == dist.version
        artifact = tmp_path / dist.name / filename
        assert fields["content"] == artifact.read_bytes()
        assert fields["sha256_digest"].decode() == hashlib.sha256(artifact.read_bytes()).hexdigest()
        seen[filename] = fields["filetype"].decode()
    assert seen == {dist.wheel: "bdist_wheel", dist.sdist: "sdist"}


def test_make_publish_refuses_an_unknown_package(
    upload_server: _UploadServer, tmp_path: Path
) -> None:
    proc = _publish(upload_server, tmp_path, "PKG=agent")
    assert proc.returncode != 0
    assert "usage: make publish PKG=<agent-accounts|local-daemon|forge-automation>" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    assert upload_server.uploads == []
