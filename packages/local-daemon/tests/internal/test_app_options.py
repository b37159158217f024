"""`AppOptions.of` reads the public entry points' keywords by name: each of its fields is a
keyword of `start_daemon` and of `build_http_app`, of the field's own type (or `None` meaning the
field's default)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from local_daemon import build_http_app, start_daemon
from local_daemon._config import AppOptions

DEFAULTED_BY_NONE = {"rpc_body_limit", "logger"}


@pytest.mark.parametrize("entry", [start_daemon, build_http_app])
def test_every_app_option_is_a_keyword_of_its_type(entry: object) -> None:
    parameters = inspect.signature(entry).parameters  # type: ignore[arg-type]
    for option in dataclasses.fields(AppOptions):
        parameter = parameters[option.name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        expected = option.type
        if option.name in DEFAULTED_BY_NONE:
            expected = f"{expected} | None"
            assert parameter.default is None
        assert parameter.annotation == expected, option.name
