"""The serve options stay in line: `start_daemon`, `run_daemon_until_signal` and the flags of
`local-daemon serve` name the same options, so one cannot gain an option the others lack."""

from __future__ import annotations

import argparse
import inspect

from local_daemon import build_http_app, run_daemon_until_signal, start_daemon
from local_daemon.cli import build_parser

# The keywords a Python caller has and the command line has not: code, not text.
PYTHON_ONLY = frozenset({"create_context", "health", "mount_routes", "format_error", "logger"})
# Keywords the command line spells as other flags (their dests), or reads from elsewhere.
SPELT_AS = {
    "registry": {"target"},
    "guards": {"allowed_hosts", "allowed_origins", "cors_origins", "mcp_client_header"},
    "rpc_body_limit": {"max_body_bytes"},
    "remote": {
        "remote_host",
        "token_file",
        "remote_allowed_hosts",
        "sign_in_hint",
        "tls_cert",
        "tls_key",
    },
    "listen_fd": set(),  # systemd's LISTEN_FDS, never a flag
}
CLI_ONLY = frozenset({"log_level"})


def _serve_dests() -> set[str]:
    parser = build_parser()
    (commands,) = (
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    serve: argparse.ArgumentParser = commands.choices["serve"]
    return {action.dest for action in serve._actions if action.dest != "help"}


def test_run_daemon_until_signal_takes_exactly_start_daemons_keywords() -> None:
    start = inspect.signature(start_daemon)
    run = inspect.signature(run_daemon_until_signal)
    assert list(run.parameters.values()) == list(start.parameters.values())
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in start.parameters.values())
    assert run.return_annotation == "None"


def test_every_start_daemon_keyword_is_a_serve_flag_or_python_only() -> None:
    keywords = set(inspect.signature(start_daemon).parameters)
    dests = _serve_dests()
    spelt = set[str]().union(*SPELT_AS.values())
    assert keywords >= PYTHON_ONLY
    assert set(SPELT_AS) <= keywords
    # Each keyword is a flag of the same name, or listed above with the flags that spell it.
    assert keywords - PYTHON_ONLY - set(SPELT_AS) == dests - spelt - CLI_ONLY
    # And each flag reaches a keyword: none is read and then dropped.
    assert spelt | CLI_ONLY <= dests


def test_build_http_app_takes_start_daemons_app_options() -> None:
    app_keywords = set(inspect.signature(build_http_app).parameters)
    start = inspect.signature(start_daemon).parameters
    listener_only = {"state_dir", "watch_root", "watch_debounce", "remote", "listen_fd"}
    listener_only |= {"insecure_unauthenticated_host"}
    shared = set(start) - listener_only
    assert shared <= app_keywords
    for name in shared - {"port", "host"}:  # the app's port and host are the bound ones
        assert inspect.signature(build_http_app).parameters[name].default == start[name].default
