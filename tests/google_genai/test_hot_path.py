"""The Gemini call path's shortcuts (issue 15) compute exactly what the long way computes, and its
memos never answer for an input that changed since."""

from __future__ import annotations

import base64
import hashlib

from google.genai import types

from loom_otel.instrumentation.google_genai import _transcript as gemini
from loom_otel.instrumentation.google_genai import _transcript as tr


def test_jsonable_reads_plain_values_and_models_alike() -> None:
    part = types.Part(function_call=types.FunctionCall(name="f", args={"n": None, "k": [b"\x00", 1.5]}))
    value = {"s": "x", "i": 3, "f": 0.5, "b": True, "none": None, "part": part, "nested": {"t": ("a", None)}}
    assert tr._jsonable(value) == {
        "s": "x",
        "i": 3,
        "f": 0.5,
        "b": True,
        "part": {"function_call": {"name": "f", "args": {"k": ["AA==", 1.5]}}},
        "nested": {"t": ["a", None]},
    }


def test_a_signature_spelled_as_text_decodes_alike_every_time() -> None:
    raw = bytes(range(256)) * 3
    standard, urlsafe = base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")
    for _ in range(2):  # the second read is the memo's
        assert tr.decode_signature(standard) == raw
        assert tr.decode_signature(urlsafe) == raw
        assert tr.decode_signature(" not base64! ") == b" not base64! "
        assert tr.decode_signature(raw) == raw
        assert tr.decode_signature("") is None


def test_a_tool_field_set_in_place_changes_the_header() -> None:
    """The tools memo is keyed by the dump without unset fields: setting one (on the same objects) must
    give a new digest, equal to the one read the long way."""
    declaration = types.FunctionDeclaration(name="get_weather", description="Weather for a city")
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    tools = config.tools
    assert tools is not None and tools[0].function_declarations == [declaration]
    declaration = tools[0].function_declarations[0]  # the config holds its own copy
    first = gemini.header_of("gcp.gemini", {"config": config})
    declaration.parameters = types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type="STRING")})
    second = gemini.header_of("gcp.gemini", {"config": config})
    assert second.tools != first.tools
    assert second.tools == gemini._digest(tr.tools_value(tools))
    tools.append(types.Tool(function_declarations=[types.FunctionDeclaration(name="get_time")]))
    third = gemini.header_of("gcp.gemini", {"config": config})
    assert third.tools not in (first.tools, second.tools)
    assert third.tools == gemini._digest(tr.tools_value(tools))
    declaration.parameters = None
    tools.pop()
    assert gemini.header_of("gcp.gemini", {"config": config}) == first


def test_signature_keys_depend_on_kind_rank_and_bytes() -> None:
    signature = b"\x01signature"
    keys = {
        tr._key(tr.THOUGHT, signature),
        tr._key(tr.THOUGHT, signature, 1),
        tr._key(tr.SIGNATURE, signature),
        tr._key(tr.THOUGHT, signature + b"!"),
    }
    assert len(keys) == 4
    expected = hashlib.sha256(b"gemini/thought\x000\x00" + signature).digest()
    assert tr.thought_key(signature) == tr._key(tr.THOUGHT, signature) == expected  # memoized: the same again
    assert tr.thought_key(signature) == expected
    far = hashlib.sha256(b"gemini/signature\x0020\x00" + signature).digest()
    assert tr._key(tr.SIGNATURE, signature, 20) == tr._key(tr.SIGNATURE, signature, 20) == far  # not memoized


def _fields(part: tr.Part) -> tuple[object, ...]:
    return (part.plain, part.thought, part.text, part.signature, part.call, part.empty)


def test_text_parts_read_alike_the_long_way_and_again_from_the_memo() -> None:
    parts = [
        types.Part(text="answer"),
        types.Part(text=""),
        types.Part(text="", thought_signature=b"\x02sig"),
        types.Part(text="answer", thought=False),
        types.Part(text="answer", thought=None),
        types.Part(text="a thought", thought=True, thought_signature=b"\x03sig"),
        types.Part(text="answer", thought_signature=b"\x04sig"),
        types.Part(text="x" * (tr._MEMO_TEXT + 1)),
    ]
    for part in parts:
        long_way = tr.read_part(part.model_dump(exclude_none=True), (0, 0))  # the dict route
        for _ in range(2):  # the second read is the memo's
            assert _fields(tr.read_part(part, (0, 0))) == _fields(long_way)


def test_a_text_part_edited_in_place_reads_anew() -> None:
    part = types.Part(text="first answer", thought_signature=b"\x05sig")
    first = tr.read_part(part, (0, 0))
    part.text = "second answer"
    second = tr.read_part(part, (0, 0))
    assert second.text == "second answer" and second.plain != first.plain
    part.thought = False
    assert not tr.read_part(part, (0, 0)).empty and tr.read_part(part, (0, 0)).plain != second.plain


def test_dict_parts_read_alike_the_sdk_objects_and_again_from_the_memo() -> None:
    signature = bytes(range(40))
    dicts: list[dict[str, object]] = [
        {"text": "answer"},
        {"text": ""},
        {"text": "", "thoughtSignature": base64.b64encode(signature).decode()},
        {"text": "answer", "thought_signature": base64.urlsafe_b64encode(signature).decode().rstrip("=")},
        {"text": "a thought", "thought": True, "thoughtSignature": base64.b64encode(signature).decode()},
        {"text": "answer", "thought": False},
        {"text": "answer", "thought": None},
        {"text": "x" * (tr._MEMO_TEXT + 1)},
        {"functionCall": {"name": "f", "args": {"k": 1}}, "thoughtSignature": base64.b64encode(signature).decode()},
    ]
    for raw in dicts:
        sdk = tr.read_part(types.Part.model_validate(raw), (0, 0))
        for _ in range(2):  # the second read is the memo's
            assert _fields(tr.read_part(raw, (0, 0))) == _fields(sdk), raw


def test_a_dict_part_edited_in_place_reads_anew() -> None:
    raw: dict[str, object] = {"text": "first answer"}
    first = tr.read_part(raw, (0, 0))
    raw["text"] = "second answer"
    second = tr.read_part(raw, (0, 0))
    assert second.text == "second answer" and second.plain != first.plain
    raw["thought"] = True
    third = tr.read_part(raw, (0, 0))
    assert third.thought and third.plain == tr.canonical({"thought": True})


def test_dict_function_calls_key_by_value_and_type() -> None:
    """Arguments equal in Python but not in JSON (1, 1.0, True; 0.0, -0.0) never share a memo entry,
    and a call edited in place (a nested value) reads anew."""
    arguments: list[object] = [1, 1.0, True, 0.0, -0.0, "1", [1], (1,), {"k": 1}, None]
    for _ in range(2):  # the second round reads from the memo
        plains = set()
        for value in arguments:
            raw = {"functionCall": {"name": "f", "args": {"n": value}}}
            part = tr.read_part(raw, (0, 0))
            assert _fields(part) == _fields(tr.Part((0, 0), *tr._read_dict(raw)))
            plains.add(part.plain)
        assert len(plains) == len(arguments) - 1  # only (1,) and [1] read alike (both a JSON array)
    args = {"city": "Paris"}
    raw = {"functionCall": {"name": "f", "args": args}, "thoughtSignature": "c2ln"}
    first = tr.read_part(raw, (0, 0))
    args["city"] = "Lyon"
    second = tr.read_part(raw, (0, 0))
    assert second.plain != first.plain and second.call == {"name": "f", "args": {"city": "Lyon"}}
