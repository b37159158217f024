"""Byte-exact layout: the serialiser is checked against real node `JSON.stringify`."""

from __future__ import annotations

import json
import random
import struct
import subprocess

import pytest

from agent_accounts.io._layout import (
    LAYOUTS,
    Layout,
    LayoutError,
    _js_number,
    detect_layout,
    parse_json_object,
    serialize,
)

_NODE_STRINGIFY = r"""
const docs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = [];
for (const d of docs) {
  const v = JSON.parse(d);
  out.push([JSON.stringify(v), JSON.stringify(v, null, 2), JSON.stringify(v, null, 4),
            JSON.stringify(v, null, '\t')]);
}
process.stdout.write(JSON.stringify(out));
"""


def _node(script: str, stdin: str) -> str:
    proc = subprocess.run(
        ["node", "-e", script], input=stdin, capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout


CREDENTIALS: dict[str, object] = {
    "agentOauth": {
        "accessToken": "sk-ant-oat01-CANARYACCESS",
        "refreshToken": "sk-ant-ort01-CANARYREFRESH",
        "expiresAt": 1_750_000_000_000,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
        "rateLimitTier": None,
    },
    "mcpOAuth": {"x|y": {"serverName": "ü ✓ \u2028", "expiresAt": 0, "nested": {}}},
    "10": [],
    "2": "two",
    "note": 'quote " backslash \\ tab \t nl \n ctl \x01 del \x7f slash /',
    "floats": [0.1, 1e21, 1e-7, -0.0, 123456789.125, 5e-324, 1.7976931348623157e308],
}


def _documents() -> list[str]:
    rng = random.Random(7)
    docs = [json.dumps(CREDENTIALS)]

    def value(depth: int) -> object:
        kind = rng.randrange(8 if depth < 4 else 5)
        if kind == 0:
            return rng.choice([None, True, False])
        if kind == 1:
            return rng.randint(-(10**20), 10**20)
        if kind == 2:
            while True:
                f = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
                if f == f and abs(f) != float("inf"):
                    return f
        if kind in (3, 4):
            return "".join(rng.choice('ab"\\\n\x00\x1f\u00e9\u2028\U0001f600/ ') for _ in range(6))
        if kind == 5:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        keys = [rng.choice(["a", "b", "0", "7", "01", "-1", "x y", "4294967295", "é"])]
        keys += [f"k{rng.randrange(9)}" for _ in range(rng.randrange(4))]
        return {k: value(depth + 1) for k in keys}

    docs += [json.dumps({"root": value(0), "2": value(1)}) for _ in range(200)]
    return docs


def test_serialize_matches_node_json_stringify_in_all_four_layouts() -> None:
    docs = _documents()
    expected = json.loads(_node(_NODE_STRINGIFY, json.dumps(docs)))
    for doc, node_forms in zip(docs, expected, strict=True):
        parsed = parse_json_object(doc.encode())
        ours = [serialize(parsed, layout).decode("utf-8") for layout in LAYOUTS]
        assert ours == node_forms


def test_numbers_format_as_javascript_does() -> None:
    rng = random.Random(3)
    values = [1e21, 1e-7, 1e-6, 100.0, 0.1, -1.5, 2.0**53, 1e20, 123e-20, 1_750_000_000_000.0]
    values += [rng.random() * 10 ** rng.randint(-30, 30) for _ in range(2000)]
    script = (
        "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "process.stdout.write(JSON.stringify(v.map(x=>String(Number(x)))))"
    )
    expected = json.loads(_node(script, json.dumps([repr(v) for v in values])))
    assert [_js_number(v) for v in values] == expected


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_each_layout_is_detected(layout: Layout) -> None:
    raw = serialize(CREDENTIALS, layout)
    assert detect_layout(raw, parse_json_object(raw)) == layout


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1}\n',  # trailing newline: JSON.stringify writes none
        b'{\n   "a": 1\n}',  # three spaces
        b'{ "a": 1 }',
        b'{"b":1,"1":2}',  # JS puts integer keys first
        b'{"a":1.0}',  # JS writes 1
        b'{"a":1000000000000000000000}',  # JS writes 1e+21
        b'{"a":12345678901234567890}',  # not a double
        b'{"a":"\\/"}',  # JS never escapes a slash
        b'{"a":"\\u00E9"}',  # JS writes the character itself
        b'{"a":"\\u001F"}',  # JS escapes in lowercase
        b'{"a":1,"a":2}',  # duplicate key
        b'{"a":-0}',
        b'{\r\n  "a": 1\r\n}',
    ],
)
def test_a_layout_that_does_not_round_trip_is_refused(raw: bytes) -> None:
    with pytest.raises(LayoutError):
        detect_layout(raw, parse_json_object(raw))


@pytest.mark.parametrize(
    "raw", [b"[1]", b"not json", b'{"a":NaN}', b'{"a":Infinity}', b"\xff", b'\xef\xbb\xbf{"a":1}']
)
def test_parse_refuses_what_json_parse_refuses_or_non_objects(raw: bytes) -> None:
    with pytest.raises(LayoutError) as info:
        parse_json_object(raw)
    assert info.value.__context__ is None


def test_parse_error_carries_no_document_text() -> None:
    raw = b'{"agentOauth":{"refreshToken":"sk-ant-ort01-CANARYLEAK",}}'
    with pytest.raises(LayoutError) as info:
        parse_json_object(raw)
    assert "CANARY" not in str(info.value)
    assert info.value.__cause__ is None
    # The JSONDecodeError keeps the whole document in `doc`: it must not be chained at all.
    assert info.value.__context__ is None


def test_lone_surrogates_are_escaped_like_javascript() -> None:
    raw = b'{"a":"\\ud800x"}'
    doc = parse_json_object(raw)
    assert serialize(doc, LAYOUTS[0]) == raw
