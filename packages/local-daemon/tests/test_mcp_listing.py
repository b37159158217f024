"""What a tool listing says about a `Registry` command: parameter descriptions from `Args:`, typed
`Literal` enums, `outputSchema` from the return annotation, title and annotation hints."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
import pytest
from mcp.client import Client

from daemon_mcp_fixture import FixtureRegistry
from local_daemon import CommandError, Registry, create_mcp_server, list_tools


def make() -> Registry:
    registry = Registry()

    @registry.command(title="Deploy a build", destructive=True, idempotent=False)
    def deploy(
        target: str, mode: Literal["fast", "safe"] = "safe", retries: int = 0
    ) -> dict[str, int]:
        """Deploy the build to a target.

        Longer text that is not the description.

        Args:
            target: Where to deploy,
                for example `staging`.
            mode (str): `fast` skips the checks.
            retries: How often to try again.

        Returns:
            A count per step.
        """
        if target == "nowhere":
            raise CommandError("no such target", 65)
        return {"steps": 3, "retries": retries}

    @registry.command(read_only=True)
    def status() -> list[str]:
        """Show status."""
        return ["idle"]

    @registry.command
    def untyped(flag: Literal[True, None] = None):  # type: ignore[no-untyped-def]
        """No return annotation at all."""
        return object.__name__

    @registry.command
    def opaque() -> Registry:
        """A return type with no JSON form."""
        return registry

    @registry.command
    def nothing() -> None:
        """Return nothing."""

    return registry


def tools() -> dict[str, types.Tool]:
    return {tool.name: tool for tool in list_tools(make(), tool_prefix=None)}


def test_parameter_descriptions_from_args_section() -> None:
    props = tools()["deploy"].input_schema["properties"]
    assert props["target"] == {
        "type": "string",
        "description": "Where to deploy, for example `staging`.",
    }
    assert props["mode"]["description"] == "`fast` skips the checks."
    assert props["retries"]["description"] == "How often to try again."
    assert tools()["deploy"].description == "Deploy the build to a target."


def test_literal_is_a_typed_enum() -> None:
    deploy = tools()["deploy"].input_schema["properties"]["mode"]
    assert deploy["enum"] == ["fast", "safe"]
    assert deploy["type"] == "string"
    flag = tools()["untyped"].input_schema["properties"]["flag"]
    assert flag["enum"] == [True, None]
    assert flag["type"] == ["boolean", "null"]
    jsonschema.validate(True, flag)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(1, flag)


def test_title_and_annotation_hints() -> None:
    listed = tools()
    deploy = listed["deploy"]
    assert deploy.title == "Deploy a build"
    assert deploy.annotations == types.ToolAnnotations(
        title="Deploy a build", destructive_hint=True, idempotent_hint=False
    )
    assert listed["status"].annotations == types.ToolAnnotations(read_only_hint=True)
    assert listed["status"].title is None
    # Nothing said, nothing sent: clients apply the spec's defaults.
    assert listed["nothing"].annotations is None


def test_output_schema_from_the_return_annotation() -> None:
    listed = tools()
    schema = listed["deploy"].output_schema
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"ok": True, "data": {"steps": 1}}, schema)
    jsonschema.validate({"ok": False, "error": {"code": 65, "message": "m"}}, schema)
    wrong: Any
    for wrong in ({"ok": True, "data": {"steps": "1"}}, {"ok": True}, {"ok": False}, []):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)
    status = listed["status"].output_schema
    assert status is not None
    jsonschema.validate({"ok": True, "data": ["idle"]}, status)
    nothing = listed["nothing"].output_schema
    assert nothing is not None
    jsonschema.validate({"ok": True, "data": None}, nothing)
    assert listed["untyped"].output_schema is None
    assert listed["opaque"].output_schema is None


def test_hand_written_registries_list_as_before() -> None:
    for tool in list_tools(FixtureRegistry(), tool_prefix="fx"):
        assert tool.output_schema is None
        assert tool.annotations is None
        assert tool.title is None


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_validates_structured_content(mode: str) -> None:
    # The SDK client checks structuredContent against outputSchema; both envelopes must pass.
    server = create_mcp_server(make(), tool_prefix="", version="7.0.0")
    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
        ok = await client.call_tool("deploy", {"target": "prod", "retries": 2})
        refused = await client.call_tool("deploy", {"target": "nowhere"})
        wrong_type = await client.call_tool("deploy", {"target": "prod", "mode": "reckless"})
    assert {tool.name for tool in listed.tools} >= {"deploy", "status"}
    assert ok.structured_content == {"ok": True, "data": {"steps": 3, "retries": 2}}
    assert refused.is_error
    assert refused.structured_content == {
        "ok": False,
        "error": {"code": 65, "message": "no such target"},
    }
    assert wrong_type.is_error


def test_server_info_carries_name_and_version() -> None:
    named: Any = create_mcp_server(make(), tool_prefix="acme", version="7.0.0")
    bare: Any = create_mcp_server(make(), tool_prefix=None, version="7.0.0")
    assert (named.name, named.version) == ("acme", "7.0.0")
    assert (bare.name, bare.version) == ("local-daemon", "7.0.0")
