"""Resources, prompts and icons over MCP, through the `mcp` package's own client: in process (both
eras), over `/mcp` and over stdio; the capabilities are declared only when a registry has them."""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from content_registry import CANARY, PNG, registry, runs
from daemon_mcp_fixture import FixtureRegistry
from daemon_raw_http import serve_app
from daemon_support import running
from local_daemon import Icon, Registry, build_http_app, create_mcp_server

TESTS_DIR = Path(__file__).resolve().parent
MODES = ["legacy", "auto"]
ICON_SRC = "https://example.com/icon.png"


def context_factory(surface: str, auth: Any) -> dict[str, Any]:
    return {"surface": surface}


@asynccontextmanager
async def in_process(mode: str, target: Any = registry) -> AsyncIterator[Client]:
    server = create_mcp_server(
        target, tool_prefix="", version="1.0.0", create_context=context_factory
    )
    async with Client(server, mode=mode) as client:
        yield client


@pytest.mark.parametrize("mode", MODES)
async def test_resources_list_and_read(mode: str) -> None:
    async with in_process(mode) as client:
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        text = await client.read_resource("fixture://readme")
        blob = await client.read_resource("fixture://logo")
        settings = await client.read_resource("fixture://settings")
        note = await client.read_resource("notes://groceries")
    by_uri = {str(one.uri): one for one in listed.resources}
    assert list(by_uri) == ["fixture://readme", "fixture://logo", "fixture://settings"]
    assert by_uri["fixture://readme"].title == "Read me"
    assert by_uri["fixture://readme"].description == "The fixture's read-me."
    assert [icon.src for icon in by_uri["fixture://readme"].icons or []] == [ICON_SRC]
    assert by_uri["fixture://logo"].mime_type == "image/png"
    [template] = templates.resource_templates
    assert (template.uri_template, template.name) == ("notes://{name}", "note")
    assert template.mime_type == "text/markdown"

    [content] = text.contents
    assert isinstance(content, types.TextResourceContents)
    assert (str(content.uri), content.mime_type, content.text) == (
        "fixture://readme",
        "text/plain",
        "Read me first.",
    )
    [content] = blob.contents
    assert isinstance(content, types.BlobResourceContents)
    assert (content.mime_type, base64.b64decode(content.blob)) == ("image/png", PNG)
    [content] = settings.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "application/json"
    assert json.loads(content.text) == {"theme": "dark", "context": {"surface": "mcp"}}
    [content] = note.contents
    assert isinstance(content, types.TextResourceContents)
    assert (str(content.uri), content.text) == ("notes://groceries", "# groceries")


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_list_and_get(mode: str) -> None:
    async with in_process(mode) as client:
        listed = await client.list_prompts()
        greeting = await client.get_prompt("greet", {"who": "Ada"})
        image = await client.get_prompt("review_image")
    prompts = {prompt.name: prompt for prompt in listed.prompts}
    assert list(prompts) == ["greet", "review_image"]
    greet = prompts["greet"]
    assert (greet.title, greet.description) == ("Greeting", "Greet someone.")
    assert [(a.name, a.description, a.required) for a in greet.arguments or []] == [
        ("who", "Whom to greet.", True),
        ("tone", "How to sound.", False),
    ]
    assert [icon.src for icon in greet.icons or []] == [ICON_SRC]
    assert prompts["review_image"].arguments == []
    [message] = greeting.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Write a warm greeting for Ada."
    assert greeting.description == "Greet someone."
    roles = [message.role for message in image.messages]
    assert roles == ["user", "assistant", "user"]
    first = image.messages[0].content
    assert isinstance(first, types.ImageContent)
    assert (first.mime_type, base64.b64decode(first.data)) == ("image/png", PNG)


@pytest.mark.parametrize("mode", MODES)
async def test_icons_and_titles_of_tools_and_server(mode: str) -> None:
    async with in_process(mode) as client:
        tools = await client.list_tools()
        info = client.server_info
    [tool] = tools.tools
    assert tool.title == "Ping"
    assert [(i.src, i.mime_type, i.sizes, i.theme) for i in tool.icons or []] == [
        (ICON_SRC, "image/png", ["48x48"], None),
        ("data:image/svg+xml;base64,PHN2Zy8+", None, None, "dark"),
    ]
    if mode == "legacy":  # the 2026-07-28 era stamps no server info
        assert info is not None
        assert info.title == "Content fixture"
        assert [icon.src for icon in info.icons or []] == [ICON_SRC]


@pytest.mark.parametrize("mode", MODES)
async def test_capabilities_only_when_the_registry_has_them(mode: str) -> None:
    async with in_process(mode) as client:
        full = client.server_capabilities
    async with in_process(mode, FixtureRegistry()) as client:
        tools_only = client.server_capabilities
        with pytest.raises(MCPError) as refused:
            await client.list_resources()
    assert full.resources is not None
    assert full.prompts is not None
    assert tools_only.resources is None
    assert tools_only.prompts is None
    assert tools_only.tools is not None
    assert refused.value.code == types.METHOD_NOT_FOUND
    # A Registry with commands alone declares neither either.
    bare = Registry()
    bare.command(name="x")(lambda: "x")
    async with in_process(mode, bare) as client:
        assert client.server_capabilities.resources is None
        assert client.server_capabilities.prompts is None


@pytest.mark.parametrize("mode", MODES)
async def test_failures_are_json_rpc_errors(mode: str) -> None:
    runs.clear()
    async with in_process(mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("fixture://nothing-here")
        with pytest.raises(MCPError) as traversal:
            await client.read_resource("notes://..%2F..%2Fetc%2Fpasswd")
        with pytest.raises(MCPError) as crash:
            await client.read_resource("notes://secret")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("notes://missing")
        with pytest.raises(MCPError) as missing_arg:
            await client.get_prompt("greet", {})
        with pytest.raises(MCPError) as unknown_prompt:
            await client.get_prompt("nope", {})
    assert unknown.value.code == types.INVALID_PARAMS
    assert unknown.value.message == "resource not found"
    assert traversal.value.code == types.INVALID_PARAMS
    # The refused variable never reached the function.
    assert [name for name, _ in runs] == ["note", "note"]
    assert crash.value.code == types.INTERNAL_ERROR
    assert crash.value.message == "internal error"
    assert CANARY not in repr(crash.value.error)
    assert (refused.value.code, refused.value.message) == (types.INVALID_PARAMS, "no such note")
    assert refused.value.data == {"code": 65}
    assert missing_arg.value.code == types.INVALID_PARAMS
    assert missing_arg.value.message == "missing required argument: who"
    assert unknown_prompt.value.message == "unknown prompt: nope"


async def test_over_http_with_the_sdk_client() -> None:
    app = build_http_app(
        registry=registry, tool_prefix="", version="1.0.0", create_context=context_factory
    )
    async with serve_app(app) as port, AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient())
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
        client = await stack.enter_async_context(Client(transport, mode="legacy"))
        listed = await client.list_resources()
        templated = await client.read_resource("notes://todo")
        prompt = await client.get_prompt("greet", {"who": "Lin", "tone": "brief"})
        assert client.server_capabilities.resources is not None
    assert len(listed.resources) == 3
    [content] = templated.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text == "# todo"
    text = prompt.messages[0].content
    assert isinstance(text, types.TextContent)
    assert text.text == "Write a brief greeting for Lin."


async def test_over_stdio_with_the_cli() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "local_daemon.cli", "mcp-stdio", "content_registry:registry"],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            templates = await client.list_resource_templates()
            read = await client.read_resource("fixture://readme")
            prompts = await client.list_prompts()
    assert [t.uri_template for t in templates.resource_templates] == ["notes://{name}"]
    [content] = read.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text == "Read me first."
    assert [prompt.name for prompt in prompts.prompts] == ["greet", "review_image"]


def test_registration_refuses_what_mcp_could_not_carry() -> None:
    fresh = Registry()

    def numbered(count: int) -> str:
        return str(count)

    with pytest.raises(TypeError, match="parameter count must be annotated str"):
        fresh.prompt(numbered)
    with pytest.raises(ValueError, match="scheme"):
        fresh.resource("no-scheme", name="plain")(lambda: "x")
    fresh.resource("a://b", name="first")(lambda: "x")
    with pytest.raises(ValueError, match="already registered"):
        fresh.resource("a://b", name="second")(lambda: "y")
    with pytest.raises(ValueError, match="https:, http: or data:"):
        Icon(src="javascript:alert(1)")
    with pytest.raises(TypeError, match="Icon"):
        Registry(icons=["https://example.com/x.png"])  # type: ignore[list-item]


def test_a_malformed_template_fails_at_start_up() -> None:
    fresh = Registry()
    fresh.resource("x://{a}{b}", name="adjacent")(lambda a, b: a + b)
    with pytest.raises(ValueError):
        create_mcp_server(fresh, tool_prefix="", version="1")


async def test_through_the_attach_relay(tmp_path: Path) -> None:
    # `mcp-stdio --attach` relays every message: resources and prompts reach the shared daemon.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "local_daemon.cli", "mcp-stdio", "--attach", str(tmp_path / "state")],
        env={"PYTHONPATH": str(TESTS_DIR)},
        cwd=TESTS_DIR,
    )
    async with running(tmp_path, registry=registry, tool_prefix=""):
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                capabilities = client.server_capabilities
                read = await client.read_resource("notes://relayed")
                prompt = await client.get_prompt("greet", {"who": "Kim"})
    assert capabilities.resources is not None
    assert capabilities.prompts is not None
    [content] = read.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text == "# relayed"
    text = prompt.messages[0].content
    assert isinstance(text, types.TextContent)
    assert text.text == "Write a warm greeting for Kim."
