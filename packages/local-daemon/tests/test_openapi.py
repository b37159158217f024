"""`GET /openapi.json`: opt-in, guarded like `/rpc`, valid OpenAPI 3.1 with the MCP tools' own
schemas, and fuzzed by schemathesis against a real `local-daemon serve` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

import openapi_sample
from daemon_raw_http import serve_app
from daemon_support import CLIENT, DaemonProcess, http, rpc, running
from local_daemon import build_http_app, create_daemon_auth, ensure_token_file, list_tools

RPC_STATUSES = {"200", "400", "403", "404", "408", "413", "415", "429", "500", "503"}


async def served_document(tmp_path: Path, *, version: str, gated: bool = False) -> dict[str, Any]:
    """Return the document an app built with `openapi=True` serves (gated: with the bearer)."""
    headers = None
    gate = None
    if gated:
        token_file = ensure_token_file(tmp_path / "served-token")
        gate = create_daemon_auth(token_file)
        headers = {"authorization": f"Bearer {Path(token_file).read_text().strip()}"}
    app = build_http_app(registry=openapi_sample.registry, version=version, gate=gate, openapi=True)
    async with serve_app(app) as port:
        status, _, body = await http(port, "GET", "/openapi.json", headers=headers)
    assert status == 200
    document = json.loads(body)
    assert isinstance(document, dict)
    return document


async def test_document_is_valid_openapi_with_every_status(tmp_path: Path) -> None:
    document = await served_document(tmp_path, version="9.9.9")
    validate(document)  # raises on any violation of the OpenAPI 3.1 schema
    assert document["info"]["version"] == "9.9.9"
    assert set(document["paths"]) == {
        f"/rpc/{info.name}" for info in openapi_sample.registry.commands()
    }
    for item in document["paths"].values():
        assert set(item) == {"post"}
        responses = item["post"]["responses"]
        assert set(responses) == RPC_STATUSES
        for status, response in responses.items():
            schema = response["content"]["application/json"]["schema"]
            if status != "200":
                assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}
    gated = await served_document(tmp_path, version="1", gated=True)
    validate(gated)
    for item in gated["paths"].values():
        assert set(item["post"]["responses"]) == RPC_STATUSES | {"401"}
        assert "token file" in item["post"]["responses"]["503"]["description"]
        assert "request bodies" in item["post"]["responses"]["503"]["description"]


async def test_the_streamed_answer_is_described_and_matches(tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    from progress_support import Seen, progress_registry

    async with running(tmp_path, registry=progress_registry(Seen()), openapi=True) as handle:
        status, _, body = await http(handle.port, "GET", "/openapi.json")
        assert status == 200
        document = json.loads(body)
        validate(document)
        headers = {**CLIENT, "Accept": "text/event-stream"}
        status, answer_headers, stream = await http(
            handle.port, "POST", "/rpc/steps", headers=headers, body=b'{"n": 3}'
        )
    assert status == 200
    ok = document["paths"]["/rpc/steps"]["post"]["responses"]["200"]
    assert answer_headers["content-type"] in ok["content"]
    assert ok["content"]["text/event-stream"]["schema"]["type"] == "string"
    components = document["components"]

    def check(instance: Any, schema: dict[str, Any]) -> None:
        Draft202012Validator({**schema, "components": components}).validate(instance)

    events = [block.split("\n") for block in stream.decode().strip().split("\n\n")]
    names = [lines[0].removeprefix("event: ") for lines in events]
    assert names == ["progress", "progress", "progress", "result"]
    for name, lines in zip(names, events, strict=True):
        data = json.loads(lines[1].removeprefix("data: "))
        if name == "progress":
            check(data, {"$ref": "#/components/schemas/ProgressEvent"})
        else:
            check(data, ok["content"]["application/json"]["schema"])
            assert data == {"ok": True, "data": 3}


async def test_schemas_are_the_mcp_tools_own(tmp_path: Path) -> None:
    document = await served_document(tmp_path, version="1")
    tools = {tool.name: tool for tool in list_tools(openapi_sample.registry, tool_prefix=None)}
    assert set(tools) == {path.removeprefix("/rpc/") for path in document["paths"]}
    for name, tool in tools.items():
        operation = document["paths"][f"/rpc/{name}"]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body == tool.input_schema
        success = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert tool.output_schema is not None
        assert success["allOf"][1] == tool.output_schema
    echo = document["paths"]["/rpc/echo"]["post"]
    assert echo["summary"] == "Echo"
    assert echo["description"] == "Echo the text."
    text = echo["requestBody"]["content"]["application/json"]["schema"]["properties"]["text"]
    assert text == {"type": "string", "description": "what to echo back."}


async def test_served_only_when_asked_and_behind_the_host_guard(tmp_path: Path) -> None:
    async with running(tmp_path / "off", registry=openapi_sample.registry) as handle:
        status, _, _ = await http(handle.port, "GET", "/openapi.json")
        assert status == 404
    async with running(tmp_path / "on", registry=openapi_sample.registry, openapi=True) as handle:
        status, headers, body = await http(handle.port, "GET", "/openapi.json")
        assert status == 200
        assert headers["content-type"].startswith("application/json")
        assert headers["cache-control"] == "no-store"
        assert json.loads(body) == await served_document(tmp_path, version="1.2.3")
        status, _, body = await http(handle.port, "GET", "/openapi.json", host="evil.example")
        assert status == 403
        assert json.loads(body)["error"]["code"] == 77


async def test_gated_app_serves_it_only_with_a_credential(tmp_path: Path) -> None:
    token_file = ensure_token_file(tmp_path / "token")
    secret = Path(token_file).read_text().strip()
    app = build_http_app(
        registry=openapi_sample.registry,
        version="1",
        gate=create_daemon_auth(token_file),
        openapi=True,
    )
    async with serve_app(app) as port:
        status, _, _ = await http(port, "GET", "/openapi.json")
        assert status == 401
        status, _, body = await http(
            port, "GET", "/openapi.json", headers={"authorization": f"Bearer {secret}"}
        )
        assert status == 200
        document = json.loads(body)
        for item in document["paths"].values():
            assert set(item["post"]["responses"]) == RPC_STATUSES | {"401", "503"}
        assert secret not in body.decode()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"text": "\\ud800"}', "a lone surrogate could not be sent back"),
        (b'{"text": "x", "times": NaN}', "NaN is not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nesting too deep to parse"),
    ],
)
async def test_bodies_schemathesis_could_send_are_400_not_500(
    tmp_path: Path, body: bytes, why: str
) -> None:
    async with running(tmp_path, registry=openapi_sample.registry) as handle:
        status, _, answer = await http(handle.port, "POST", "/rpc/echo", headers=CLIENT, body=body)
        assert status == 400, why
        assert json.loads(answer) == {
            "ok": False,
            "error": {"code": 65, "message": "request body is not valid JSON"},
        }
        # A surrogate pair is a real character and still works.
        assert await rpc(handle.port, "echo", {"text": "\U0001f600"}) == (
            200,
            {"ok": True, "data": {"text": "\U0001f600"}},
        )


async def test_a_result_that_cannot_be_json_is_the_500_envelope(tmp_path: Path) -> None:
    from local_daemon import Registry

    registry = Registry()

    @registry.command
    def bad(kind: str) -> Any:
        return float("nan") if kind == "nan" else "\ud800"

    async with running(tmp_path, registry=registry) as handle:
        for kind in ("nan", "surrogate"):
            status, body = await rpc(handle.port, "bad", {"kind": kind})
            assert (status, body) == (
                500,
                {"ok": False, "error": {"code": 70, "message": "internal error"}},
            )


@pytest.mark.slow
def test_schemathesis_finds_no_5xx_and_no_answer_off_the_document(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "state", "--openapi", target="openapi_sample:registry")
    try:
        port = daemon.wait_ready()
        # Every check but `positive_data_acceptance`: the sample's commands refuse some
        # schema-valid input on purpose (400, 403, 429), as real commands do. Bounded examples and
        # a fixed seed keep the run short and repeatable.
        result = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                f"http://127.0.0.1:{port}/openapi.json",
                "--header",
                "x-local-client: schemathesis",
                "--checks",
                "all",
                "--exclude-checks",
                "positive_data_acceptance",
                "--max-examples",
                "10",
                "--seed",
                "18",
                "--workers",
                "2",
                "--request-timeout",
                "10",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
        assert "No issues found" in result.stdout
    finally:
        stderr = daemon.stop()
    assert "Traceback" not in stderr, stderr[-4000:]
