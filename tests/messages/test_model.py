from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConversationError
from synopsis.formats import decode
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    content_hash,
    message_id,
    message_ids,
    message_text,
    thaw,
)
from synopsis.messages import model as messages_module
from tests.formats.strategies import (
    anthropic_request,
    gemini_request,
    openai_history,
    responses_history,
)

ANY_WIRE = st.one_of(
    openai_history().map(lambda items: (items, "openai", None)),
    responses_history().map(lambda items: (items, "responses", None)),
    anthropic_request().map(lambda req: (req[0], "anthropic", req[1])),
    gemini_request().map(lambda req: (req[0], "gemini", req[1])),
)


def every_kind() -> Message:
    return Message(
        Role.ASSISTANT,
        (
            TextPart("hello", extra={"cache_control": {"type": "ephemeral"}}),
            ReasoningPart("thinking", signature="sig"),
            ToolCallPart("c1", "read_file", {"path": "a.py"}),
            ToolResultPart("c1", (TextPart("body"), MediaPart("image", url="https://x/i.png"))),
            MediaPart("document", media_type="application/pdf", filename="spec.pdf"),
            OpaquePart("server_tool_use", {"type": "server_tool_use", "id": "s1"}, "search"),
        ),
    )


def test_values_are_frozen_all_the_way_down_and_detached_from_their_inputs() -> None:
    extra = {"k": [1, {"deep": 2}]}
    args = {"path": "a.py", "opts": {"mode": "r"}}
    part = ToolCallPart("c1", "read_file", args, extra=extra)
    message = Message("user", (TextPart("x"),), extra=extra)  # type: ignore[arg-type]
    before = content_hash(message)
    args["opts"]["mode"] = "w"  # type: ignore[index]
    extra["k"][1]["deep"] = 3  # type: ignore[index]
    assert thaw(part.arguments) == {"path": "a.py", "opts": {"mode": "r"}}
    assert thaw(message.extra) == {"k": [1, {"deep": 2}]}
    assert content_hash(message) == before
    assert message.role is Role.USER
    with pytest.raises(TypeError):
        message.extra["k"][1]["deep"] = 4
    with pytest.raises(TypeError):
        part.arguments["opts"]["mode"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = Role.ASSISTANT  # type: ignore[misc]
    with pytest.raises(TypeError):
        message.extra["k"] = 3  # type: ignore[index]
    with pytest.raises(TypeError):
        part.arguments["path"] = "x"  # type: ignore[index]


def test_values_hash_so_they_can_key_caches_and_sets() -> None:
    a, b = every_kind(), every_kind()
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, dataclasses.replace(a, id="other")}) == 2


def test_what_a_message_remembers_of_its_hashes_is_never_part_of_it() -> None:
    a, b = every_kind(), every_kind()
    first = (hash(a), content_hash(a))
    assert (hash(a), content_hash(a)) == first == (hash(b), content_hash(b))
    assert a == b
    assert "_hash" not in repr(a)
    other = dataclasses.replace(a, name="other")  # worked out afresh, not copied
    assert content_hash(other) != first[1]
    assert hash(other) == hash((other.role, other.id, other.name, other.parts))


@pytest.mark.parametrize(
    ("build", "rule"),
    [
        (lambda: Message("wizard"), "message.role"),  # type: ignore[arg-type]
        (lambda: Message(Role.USER, None), "message.parts"),  # type: ignore[arg-type]
        (lambda: Message(Role.USER, ("not a part",)), "message.parts"),  # type: ignore[arg-type]
        (lambda: TextPart(5), "part.text"),  # type: ignore[arg-type]
        (lambda: ToolCallPart(1, "f"), "tool_call.id"),  # type: ignore[arg-type]
        (lambda: ToolCallPart("c", None), "tool_call.name"),  # type: ignore[arg-type]
        (lambda: ToolCallPart("c", "f", 3), "tool_call.arguments"),  # type: ignore[arg-type]
        (lambda: ToolResultPart(None), "tool_result.id"),  # type: ignore[arg-type]
        (lambda: ToolResultPart("c", 5), "tool_result.content"),  # type: ignore[arg-type]
        (lambda: ToolResultPart("c", ("text",)), "tool_result.content"),  # type: ignore[arg-type]
        (lambda: ReasoningPart(None), "reasoning.text"),  # type: ignore[arg-type]
        (lambda: OpaquePart("x", None), "opaque.raw"),  # type: ignore[arg-type]
    ],
)
def test_wrong_types_are_refused_with_the_rule_they_break(build, rule) -> None:
    with pytest.raises(ConversationError) as info:
        build()
    assert info.value.rule == rule


def test_a_given_id_wins_and_a_derived_one_is_position_and_content() -> None:
    given_id = Message(Role.USER, (TextPart("hi"),), id="msg_123")
    assert message_id(given_id, 7) == "msg_123"
    plain = Message(Role.USER, (TextPart("hi"),))
    derived = message_id(plain, 7)
    assert re.fullmatch(r"m7-[0-9a-f]{12}", derived)
    assert derived == f"m7-{content_hash(plain)[:12]}"
    assert message_id(Message(Role.USER, (TextPart("hi"),)), 7) == derived
    assert message_id(plain, 8) != derived
    assert message_id(Message(Role.USER, (TextPart("hi!"),)), 7) != derived
    assert message_ids([given_id, plain]) == ("msg_123", message_id(plain, 1))


def test_the_hash_sees_every_field_of_every_part_kind_but_not_wire_notes() -> None:
    base = every_kind()
    assert content_hash(base) == content_hash(dataclasses.replace(base, wire={"fmt": "x"}))
    seen = {content_hash(base)}
    for i, part in enumerate(base.parts):
        for f in dataclasses.fields(part):
            if f.name == "token_estimate":
                continue  # an estimate of cost, not content: it does not change what was said
            value = getattr(part, f.name)
            if isinstance(value, bool):
                changed: object = not value
            elif isinstance(value, str):
                changed = value + "~"
            elif value is None:
                changed = "set"
            elif isinstance(value, tuple):
                changed = (*value, TextPart("more"))
            else:
                changed = {**thaw(value), "more": 1}
            parts = list(base.parts)
            parts[i] = dataclasses.replace(part, **{f.name: changed})  # type: ignore[arg-type]
            digest = content_hash(dataclasses.replace(base, parts=tuple(parts)))
            assert digest not in seen, (type(part).__name__, f.name)
            seen.add(digest)
    for field, value in (("name", "bob"), ("id", "x"), ("extra", {"a": 1}), ("role", Role.USER)):
        digest = content_hash(dataclasses.replace(base, **{field: value}))  # type: ignore[arg-type]
        assert digest not in seen, field
        seen.add(digest)


def test_text_of_a_message_renders_every_part_kind() -> None:
    text = message_text(every_kind())
    assert text.splitlines() == [
        "hello",
        "thinking",
        'read_file({"path":"a.py"})',
        "body",
        "[image: https://x/i.png]",
        "[document: spec.pdf]",
        "search",
    ]


def test_inline_media_is_named_by_type_not_by_its_data() -> None:
    inline = MediaPart("image", media_type="image/png", url="data:image/png;base64,AAAA")
    assert inline.placeholder == "[image: image/png]"
    sized = MediaPart("audio", token_estimate=120)
    assert sized.placeholder == "[audio: audio, ~120 tokens]"


@given(ANY_WIRE)
def test_ids_are_stable_across_decodes_and_unique_by_position(wire) -> None:
    items, fmt, system = wire
    once = decode(items, fmt, system=system).messages
    again = decode(items, fmt, system=system).messages
    assert message_ids(once) == message_ids(again)
    derived = [message_id(m, i) for i, m in enumerate(once) if not m.id]
    assert len(set(derived)) == len(derived)
    assert [content_hash(m) for m in once] == [content_hash(m) for m in again]


# -- small read-only mappings are shared --------------------------------------------------


def test_equal_small_extras_are_one_shared_mapping() -> None:
    first = ToolCallPart("a", "f", "{}", extra={"type": "function", "function": {}})
    second = ToolCallPart("b", "g", "{}", extra={"type": "function", "function": {}})
    assert first.extra is second.extra
    assert first.extra["function"] is second.extra["function"]
    one = Message(Role.USER, (TextPart("x"),), wire={"format": "openai", "content": "string"})
    two = Message(Role.USER, (TextPart("y"),), wire={"format": "openai", "content": "string"})
    assert one.wire is two.wire


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"n": 1}, {"n": True}),  # equal under ==, not the same JSON
        ({"x": 0.0}, {"x": -0.0}),  # a float's sign is lost in ==: floats are never shared
        ({"s": "k" * 65}, {"s": "k" * 65}),  # long text is the caller's own: copied
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # another order writes other JSON
        ({"l": [1]}, {"l": [1]}),  # a list inside
    ],
)
def test_mappings_that_may_write_other_json_are_not_shared(
    a: dict[str, object], b: dict[str, object]
) -> None:
    first, second = TextPart("t", extra=a), TextPart("t", extra=b)
    assert first.extra is not second.extra
    assert list(first.extra.items()) == list(_plain(a).items())
    assert list(second.extra.items()) == list(_plain(b).items())


def _plain(value: dict[str, object]) -> dict[str, object]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}


def test_no_more_mappings_are_shared_than_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages_module, "_SHARED_LIMIT", len(messages_module._SHARED))
    first = TextPart("t", extra={"never seen before": "value"})
    again = TextPart("t", extra={"never seen before": "value"})
    assert first.extra == again.extra
    assert first.extra is not again.extra


def test_a_shared_mapping_given_again_is_kept_as_it_is() -> None:
    first = ToolCallPart("a", "f", "{}", extra={"type": "function", "function": {}})
    again = ToolCallPart("b", "g", "{}", extra=first.extra)
    nested = TextPart("t", extra={"outer": first.extra, "n": [1, 2]})
    assert again.extra is first.extra
    assert nested.extra["outer"] is first.extra
    assert thaw(nested.extra) == {"outer": {"type": "function", "function": {}}, "n": [1, 2]}


def test_values_of_other_types_pass_through_freezing_and_thawing() -> None:
    class Text(str):
        pass

    marker = object()
    call = ToolCallPart("c", "f", Text('{"a": 1}'))
    assert call.arguments == '{"a": 1}'
    assert isinstance(call.arguments, Text)
    opaque = OpaquePart("x", {"kept": marker, "list": [marker]})
    assert opaque.raw["kept"] is marker
    assert thaw(opaque.raw) == {"kept": marker, "list": [marker]}


def test_parts_given_as_a_list_are_held_as_a_tuple() -> None:
    message = Message(Role.USER, [TextPart("a"), TextPart("b")])  # type: ignore[arg-type]
    assert message.parts == (TextPart("a"), TextPart("b"))
    assert type(message.parts) is tuple
