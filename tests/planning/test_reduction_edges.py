"""The cheap reductions at their edges: a value exactly at a limit, notes that reach nested
values, histories shorter than the part kept recent, and a message reduced under two
configurations."""

from __future__ import annotations

import json

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import MediaPart, Message, Role, TextPart, ToolCallPart, ToolResultPart
from synopsis.planning import Measure, Reductions, TruncateArgs, reduce
from synopsis.planning.reductions import DUPLICATE_MARKER, Reduction, truncate_call
from tests.planning.helpers import ones, say, user

WINDOW = 10_000
SMALL = TruncateArgs(max_length=100, prefix=5, marker="...")


def call(arguments: str | dict[str, object], name: str = "write_file") -> ToolCallPart:
    return ToolCallPart("w", name, arguments)


def tool(call_id: str, text: str) -> Message:
    return Message(Role.TOOL, (ToolResultPart(call_id, text),))


def run(msgs: list[Message], config: Reductions, **kw: object):
    return reduce(
        msgs,
        kw.pop("counts", ones(msgs)),  # type: ignore[arg-type]
        measure=Measure(round(0.75 * WINDOW), len(msgs), WINDOW),
        threshold=8_000,
        config=config,
        **kw,  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------------- truncation


def test_a_prefix_and_marker_as_long_as_the_limit_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="must be shorter than max_length"):
        TruncateArgs(max_length=8, prefix=5, marker="...")
    assert TruncateArgs(max_length=9, prefix=5, marker="...").max_length == 9


def test_a_value_exactly_at_the_limit_is_kept_whole() -> None:
    assert truncate_call(call(json.dumps({"content": "x" * 100})), SMALL) is None
    cut = truncate_call(call(json.dumps({"content": "x" * 101})), SMALL)
    assert cut is not None
    assert json.loads(cut.arguments_text) == {"content": "xxxxx..."}


def test_a_note_as_long_as_what_it_saves_is_left_out() -> None:
    # 101 characters cut to 8 ("xxxxx..."): a note of 93 makes 101, no shorter than the
    # original, so it is left out; one of 92 stays.
    value = {"content": "x" * 101}
    long_note = truncate_call(call(json.dumps(value)), SMALL, lambda text: "n" * 93)
    assert long_note is not None
    assert json.loads(long_note.arguments_text) == {"content": "xxxxx..."}
    short_note = truncate_call(call(json.dumps(value)), SMALL, lambda text: "n" * 92)
    assert short_note is not None
    assert json.loads(short_note.arguments_text) == {"content": "xxxxx..." + "n" * 92}


def test_a_long_value_anywhere_in_a_list_is_cut_and_noted() -> None:
    args = {"files": ["y" * 200, "short"], "more": [["z" * 200]]}
    cut = truncate_call(call(json.dumps(args)), SMALL, lambda text: f"[{len(text)}]")
    assert cut is not None
    assert json.loads(cut.arguments_text) == {
        "files": ["yyyyy...[200]", "short"],
        "more": [["zzzzz...[200]"]],
    }


def test_arguments_held_as_an_object_are_noted_too() -> None:
    cut = truncate_call(call({"content": "q" * 200}), SMALL, lambda text: "[held]")
    assert cut is not None
    assert cut.arguments == {"content": "qqqqq...[held]"}


def test_a_call_with_nothing_long_is_left_alone_whatever_its_values() -> None:
    assert truncate_call(call(json.dumps({"n": 3, "ok": True, "none": None})), SMALL) is None
    assert truncate_call(call({"n": 3.5, "items": [1, 2]}), SMALL) is None


def test_text_outside_ascii_stays_as_written() -> None:
    cut = truncate_call(call(json.dumps({"path": "café.py", "content": "é" * 200})), SMALL)
    assert cut is not None
    assert "café.py" in cut.arguments_text
    assert "\\u" not in cut.arguments_text


def test_a_history_shorter_than_the_recent_part_is_not_truncated() -> None:
    write = Message(Role.ASSISTANT, (call(json.dumps({"content": "x" * 5000})),))
    config = Reductions(dedupe_results=False, message_threshold=None)
    assert not run([write, say("ok")], config).changed


def test_a_message_truncated_under_two_configurations_gets_each_ones_cut() -> None:
    write = Message(Role.ASSISTANT, (call(json.dumps({"content": "x" * 5000})),))
    msgs = [user("t"), write, *[say(str(i)) for i in range(20)]]
    short = run(msgs, Reductions(truncate_args=TruncateArgs(prefix=5), message_threshold=None))
    long = run(msgs, Reductions(truncate_args=TruncateArgs(prefix=50), message_threshold=None))
    assert json.loads(short.messages[1].tool_calls[0].arguments_text)["content"].startswith(
        "x" * 5 + "..."
    )
    assert json.loads(long.messages[1].tool_calls[0].arguments_text)["content"].startswith(
        "x" * 50 + "..."
    )


# ------------------------------------------------------------------------- duplicates

DEDUPE = Reductions(truncate_args=None, message_threshold=None, dedupe_keep_messages=2)


def test_a_result_exactly_at_the_minimum_length_is_deduplicated() -> None:
    text = "r" * 200
    out = run([tool("a", text), tool("b", text), say("1"), say("2")], DEDUPE)
    assert [r.index for r in out.applied] == [1]
    shorter = "r" * 199
    assert not run([tool("a", shorter), tool("b", shorter), say("1"), say("2")], DEDUPE).changed


def test_a_duplicate_is_found_after_a_short_result_or_a_first_in_the_same_message() -> None:
    text = "r" * 300
    first = tool("a", text)
    both = Message(Role.TOOL, (ToolResultPart("s", "short"), ToolResultPart("b", text)))
    out = run([first, both, say("1"), say("2")], DEDUPE)
    assert [(r.index, r.part) for r in out.applied] == [(1, 1)]
    pair = Message(Role.TOOL, (ToolResultPart("c", text), ToolResultPart("d", text)))
    inner = run([user("t"), pair, say("1"), say("2")], DEDUPE)
    assert [(r.index, r.part) for r in inner.applied] == [(1, 1)]


def test_the_first_recent_message_is_not_deduplicated_and_the_one_before_it_is() -> None:
    text = "r" * 300
    msgs = [tool("a", text), tool("b", text), tool("c", text), say("1")]
    # Two kept recent: messages 2 and 3. Message 1 goes, message 2 stays.
    out = run(msgs, DEDUPE)
    assert [r.index for r in out.applied] == [1]
    assert out.applied[0] == Reduction(
        "dedupe_result", 1, 0, 300, len(f"{DUPLICATE_MARKER} 'a'; 300 characters]"), "a"
    )


def test_a_history_shorter_than_the_recent_part_keeps_even_its_first_message() -> None:
    text = "r" * 300
    pair = Message(Role.TOOL, (ToolResultPart("c", text), ToolResultPart("d", text)))
    config = Reductions(truncate_args=None, message_threshold=None, dedupe_keep_messages=5)
    assert not run([pair, say("1")], config).changed


def test_a_message_deduplicated_against_another_origin_names_that_one() -> None:
    text = "r" * 300
    shared = tool("x", text)
    tail = [say("1"), say("2")]
    first = run([tool("a", text), shared, *tail], DEDUPE)
    second = run([tool("b", text), shared, *tail], DEDUPE)
    assert "'a'" in first.messages[1].text
    assert "'b'" in second.messages[1].text


# ------------------------------------------------------------------------- oversized parts


def test_a_part_exactly_at_the_limit_is_not_marked_and_a_part_past_media_is() -> None:
    config = Reductions(truncate_args=None, dedupe_results=False, message_threshold=0.5)
    # The limit is half of 8,000 tokens; counting a text as one token a character.
    at_limit = Message(Role.USER, (TextPart("a" * 4_000),))
    past_media = Message(Role.USER, (MediaPart("image", data="iVBO"), TextPart("b" * 4_001)))
    out = run([at_limit, past_media], config, counts=[5_000, 5_000], count_text=len)
    assert [(o.index, o.part, o.tokens) for o in out.oversized] == [(1, 1, 4_001)]


def test_without_a_text_counter_nothing_is_marked() -> None:
    config = Reductions(truncate_args=None, dedupe_results=False, message_threshold=0.5)
    out = run([Message(Role.USER, (TextPart("a" * 9_000),))], config, counts=[9_000])
    assert out.oversized == ()


def test_a_long_value_before_the_last_item_of_a_list_is_cut() -> None:
    cut = truncate_call(call(json.dumps({"files": ["y" * 200, "short"]})), SMALL)
    assert cut is not None
    assert json.loads(cut.arguments_text) == {"files": ["yyyyy...", "short"]}
