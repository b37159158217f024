"""`agent_accounts.__all__` is the pure core's versioning contract: exactly these names."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import agent_accounts

EXPECTED = {
    # constants
    "DEFAULT_BEST_WINDOWS",
    "FRESH_READING_S",
    "KNOWN_WINDOWS",
    "WINDOW_SECONDS",
    "REDACTED",
    # errors
    "AccountsError",
    "RedactedError",
    # login state
    "LoginExpired",
    "LoginMissing",
    "LoginPresent",
    "LoginRefused",
    "LoginState",
    "RefusalReason",
    # usage reading shapes
    "RateWindow",
    "UsageReading",
    # usage alerts
    "Alert",
    "AlertMark",
    "alert_crossings",
    "parse_alert_thresholds",
    # pace and the best account now
    "BestCandidate",
    "BestChoice",
    "NoBest",
    "RejectReason",
    "WindowForecast",
    "WindowPace",
    "choose_best",
    "reading_pace",
    "window_forecast",
    "window_pace",
    # when `poll --period` polls each profile
    "MIN_POLL_GAP_S",
    "poll_phases",
    "poll_times",
    # functions
    "account_label",
    "login_state_from_credentials",
    "needs_refresh",
    "parse_usage_reading",
    "redact_secrets",
    "usage_from_oauth_response",
}

PRIVATE_MODULES = [
    "_alerts",
    "_best",
    "_errors",
    "_forecast",
    "_journal",
    "_labels",
    "_login",
    "_login_rules",
    "_numbers",
    "_oauth",
    "_pace",
    "_redact",
    "_schedule",
    "_types",
    "_usage",
]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022 order: SCREAMING_CASE, then CamelCase, then the rest, each alphabetical
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return (kind, name)


def test_all_is_exactly_the_public_surface() -> None:
    assert set(agent_accounts.__all__) == EXPECTED
    assert len(agent_accounts.__all__) == len(EXPECTED)
    for name in agent_accounts.__all__:
        assert hasattr(agent_accounts, name), name


def test_all_is_sorted() -> None:
    assert list(agent_accounts.__all__) == sorted(agent_accounts.__all__, key=_isort_key)


def test_no_other_public_names_leak_from_the_front_door() -> None:
    public = {n for n in vars(agent_accounts) if not n.startswith("_")}
    # `annotations` is the __future__ import, `TYPE_CHECKING` the typing-free guard of the lazy
    # front door; `io` and `cli` appear once those submodules load
    assert public - EXPECTED <= {"annotations", "TYPE_CHECKING", "io", "cli"}


@pytest.mark.parametrize("module_name", PRIVATE_MODULES)
def test_private_modules_declare_their_names(module_name: str) -> None:
    module = importlib.import_module(f"agent_accounts.{module_name}")
    names = module.__all__
    assert names == sorted(names, key=_isort_key)
    for name in names:
        assert hasattr(module, name), name


def test_every_public_function_has_a_one_line_imperative_docstring() -> None:
    for name in agent_accounts.__all__:
        obj = getattr(agent_accounts, name)
        if inspect.isfunction(obj):
            doc = inspect.getdoc(obj)
            assert doc, name
            first = doc.splitlines()[0]
            assert first.endswith("."), name
            assert not first.split()[0].endswith("s"), f"{name}: imperative mood"


def test_error_tree() -> None:
    assert issubclass(agent_accounts.AccountsError, Exception)
    assert issubclass(agent_accounts.RedactedError, agent_accounts.AccountsError)
    doc = importlib.import_module(agent_accounts.AccountsError.__module__).__doc__ or ""
    assert "AccountsError" in doc
    assert "RedactedError" in doc


def test_readme_example_runs() -> None:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    block = re.search(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.DOTALL)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), str(readme), "exec"), namespace)
    assert namespace["reading"] == {
        "session_id": "usage-poll",
        "written_at": 1_767_225_600,
        "rate_limits": {
            "five_hour": {"used_percentage": 23, "resets_at": 1_767_243_600},
            "seven_day": {"used_percentage": 41.5},
        },
        "source": "oauth-usage",
        "account": "work",
    }


@pytest.mark.parametrize(
    ("name", "signature"),
    [
        ("parse_usage_reading", "(obj: 'object') -> 'UsageReading | None'"),
        (
            "usage_from_oauth_response",
            "(body: 'object', *, written_at: 'float', account: 'str | None' = None)"
            " -> 'UsageReading | None'",
        ),
        (
            "login_state_from_credentials",
            "(credentials: 'object', now_ms: 'float') -> 'LoginState'",
        ),
        (
            "needs_refresh",
            "(state: 'LoginState', now_ms: 'float', margin_ms: 'float') -> 'bool'",
        ),
        (
            "account_label",
            "(config_dir: 'str | os.PathLike[str]', *,"
            " home: 'str | os.PathLike[str] | None' = None) -> 'str'",
        ),
        (
            "redact_secrets",
            "(text_or_exception: 'object') -> 'str | BaseException'",
        ),
    ],
)
def test_signatures_follow_api_md(name: str, signature: str) -> None:
    assert str(inspect.signature(getattr(agent_accounts, name))) == signature
