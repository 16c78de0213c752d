from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import (
    MediaPart,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    thaw,
)
from synopsis.planning import Measure, Reduced, Reductions, Trigger, TruncateArgs, reduce
from synopsis.planning.reductions import DUPLICATE_MARKER, SUMMARY_MARKER, truncate_call
from tests.planning.helpers import ones, say, user

if TYPE_CHECKING:
    from collections.abc import Callable

BODY = "x" * 5000
WINDOW = 10_000


def write(call_id: str, body: str = BODY, *, as_text: bool = True) -> Message:
    args = {"path": "src/app.py", "content": body}
    arguments = json.dumps(args) if as_text else args
    return Message(Role.ASSISTANT, (ToolCallPart(call_id, "write_file", arguments),))


def tool(call_id: str, text: str) -> Message:
    return Message(Role.TOOL, (ToolResultPart(call_id, text),))


def history(n_recent: int = 20) -> list[Message]:
    return [
        user("task"),
        write("w1"),
        tool("w1", "written"),
        write("w2", as_text=False),
        tool("w2", "written"),
        *[say(f"step {i}") for i in range(n_recent)],
    ]


def run(
    msgs: list[Message],
    ratio: float = 0.75,
    config: Reductions | None = None,
    count_text: Callable[[str], int] | None = None,
    threshold: int = 8_000,
) -> Reduced:
    measure = Measure(round(ratio * WINDOW), len(msgs), WINDOW)
    return reduce(
        msgs,
        ones(msgs),
        measure=measure,
        threshold=threshold,
        config=config or Reductions(message_threshold=None),
        count_text=count_text,
    )


def test_old_file_writes_keep_a_20_character_prefix_and_a_marker() -> None:
    msgs = history()
    out = run(msgs)
    assert [r.kind for r in out.applied] == ["truncate_args", "truncate_args"]
    for index in (1, 3):
        call = out.messages[index].tool_calls[0]
        args = (
            json.loads(call.arguments) if isinstance(call.arguments, str) else thaw(call.arguments)
        )
        assert args == {"path": "src/app.py", "content": "x" * 20 + "...(argument truncated)"}
    assert out.applied[0].chars_before > 5000 > out.applied[0].chars_after
    untouched = [i for i in range(len(msgs)) if i not in (1, 3)]
    assert all(out.messages[i] is msgs[i] for i in untouched)


def test_nothing_is_truncated_below_70_percent_or_inside_the_last_20_messages() -> None:
    assert not run(history(), ratio=0.69).changed
    recent = history(n_recent=18)  # the writes are now among the last 20 messages
    assert [r.index for r in run(recent).applied] == [1]


def test_other_tools_short_values_and_non_json_arguments_are_left_alone() -> None:
    odd = Message(Role.ASSISTANT, (ToolCallPart("w3", "write_file", "not json " + BODY),))
    other = Message(Role.ASSISTANT, (ToolCallPart("r1", "read_file", json.dumps({"p": BODY})),))
    short = write("w4", "short")
    msgs = [user("t"), odd, other, short, *[say(str(i)) for i in range(20)]]
    assert not run(msgs).changed


def test_a_message_reduced_again_the_same_way_is_the_same_copy() -> None:
    # A call with text and another tool beside it: only the configured tool's arguments go.
    mixed = Message(
        Role.ASSISTANT,
        (
            TextPart("writing it now"),
            ToolCallPart("r9", "read_file", json.dumps({"p": BODY})),
            *write("w9").parts,
        ),
    )
    big = "line\n" * 100
    # A result beside text (Anthropic's user turn): only the result gives way.
    beside = Message(Role.USER, (TextPart("see"), ToolResultPart("b", big)))
    msgs = [user("t"), mixed, tool("a", big), beside, *history()[1:]]
    first, second = run(msgs), run(msgs)
    assert [(r.kind, r.index, r.part) for r in first.applied] == [
        ("truncate_args", 1, 2),
        ("truncate_args", 4, 0),
        ("truncate_args", 6, 0),
        ("dedupe_result", 3, 1),
    ]
    assert first.messages[3].parts[0] == beside.parts[0]
    assert first.applied == second.applied
    cut = first.messages[1]
    assert cut.parts[:2] == mixed.parts[:2]
    assert cut.parts[2] != mixed.parts[2]
    # The next call finds the very copies made before: their counts and hashes stand.
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=True))
    other = run(msgs, config=Reductions(message_threshold=None, dedupe_min_chars=10_000))
    assert other.messages[3] is msgs[3]  # another configuration, another answer


def test_truncation_reaches_nested_strings_and_is_idempotent() -> None:
    nested = {"edits": [{"old": BODY, "new": "y"}], "path": "a.py"}
    call = ToolCallPart("e1", "edit_file", nested)
    msgs = [user("t"), Message(Role.ASSISTANT, (call,)), *[say(str(i)) for i in range(20)]]
    once = run(msgs)
    edits = thaw(once.messages[1].tool_calls[0].arguments)["edits"]
    assert edits[0]["old"].endswith("...(argument truncated)")
    twice = run(list(once.messages))
    assert not twice.changed
    assert twice.messages == once.messages


def test_identical_old_results_point_to_the_first() -> None:
    big = "line\n" * 100
    msgs = [user("t"), tool("a", big), tool("b", big), tool("c", "different " * 30), tool("d", big)]
    msgs += [say(str(i)) for i in range(20)]
    out = run(msgs, ratio=0.1)
    assert [(r.kind, r.index) for r in out.applied] == [("dedupe_result", 2), ("dedupe_result", 4)]
    replaced = out.messages[2].tool_results[0]
    assert replaced.call_id == "b"
    assert isinstance(replaced.content, str)
    assert replaced.content.startswith(f"{DUPLICATE_MARKER} 'a'")
    assert out.messages[1] is msgs[1]
    again = run(list(out.messages), ratio=0.1)
    assert not again.changed


def test_recent_and_small_duplicates_stay() -> None:
    big = "line\n" * 100
    msgs = [user("t"), tool("a", big), *[say(str(i)) for i in range(19)], tool("b", big)]
    assert not run(msgs, ratio=0.1).changed
    tiny = [user("t"), tool("a", "ok"), tool("b", "ok"), *[say(str(i)) for i in range(20)]]
    assert not run(tiny, ratio=0.1).changed
    media = Message(
        Role.TOOL, (ToolResultPart("m", (TextPart(big),)),)
    )  # text-only part lists compare by their text
    msgs = [user("t"), tool("a", big), media, *[say(str(i)) for i in range(20)]]
    assert [r.index for r in run(msgs, ratio=0.1).applied] == [2]


def test_oversized_parts_are_marked_and_summaries_are_not_marked_again() -> None:
    huge = "word " * 6000
    msgs = [user("t"), tool("a", huge), tool("b", f"{SUMMARY_MARKER} {huge}"), say("x")]
    counts = [5, 6000, 6000, 1]
    out = reduce(
        msgs,
        counts,
        measure=Measure(12_000, 4, 100_000),
        threshold=8_000,
        config=Reductions(truncate_args=None),
        count_text=lambda text: len(text.split()),
    )
    assert [(o.index, o.part, o.tokens) for o in out.oversized] == [(1, 0, 6000)]
    assert not out.changed


def test_a_long_summary_of_synopsis_own_is_not_marked_oversized() -> None:
    # Re-compacting a history that holds a large earlier summary must summarize it again, not
    # digest it as if it were a tool output.
    huge = "word " * 6000
    summary = Message(Role.USER, (TextPart(f'<synopsis-summary depth="0">\n{huge}'),))
    msgs = [user("t"), summary, tool("a", huge), say("x")]
    out = reduce(
        msgs,
        [5, 6000, 6000, 1],
        measure=Measure(12_000, 4, 100_000),
        threshold=8_000,
        config=Reductions(truncate_args=None),
        count_text=lambda text: len(text.split()),
    )
    assert [(o.index, o.part) for o in out.oversized] == [(2, 0)]


def test_each_reduction_can_be_switched_off() -> None:
    big = "line\n" * 100
    msgs = [*history(), tool("a", big), tool("b", big)]
    msgs = [msgs[0], msgs[-2], msgs[-1], *msgs[1:-2]]
    off = Reductions(truncate_args=None, dedupe_results=False, message_threshold=None)
    assert not run(msgs, config=off).changed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_length": 10}, "must be shorter than max_length"),
        ({"prefix": -1}, "prefix must be a whole number"),
        ({"keep_messages": 2.5}, "keep_messages"),
    ],
)
def test_bad_truncation_settings_are_refused(kwargs, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        TruncateArgs(**kwargs)


def test_truncation_settings_are_switchable() -> None:
    cfg = TruncateArgs(tools=frozenset({"save"}), trigger=Trigger.tokens(1), keep_messages=0)
    call = ToolCallPart("s", "save", {"body": BODY})
    msgs = [user("t"), Message(Role.ASSISTANT, (call,)), write("w")]
    out = run(msgs, config=Reductions(truncate_args=cfg, message_threshold=None))
    assert [r.index for r in out.applied] == [1]


def test_truncation_never_writes_json_a_strict_parser_refuses() -> None:
    args = '{"path": "a", "content": "%s", "mode": 1e400}' % ("x" * 3000)
    call = Message(Role.ASSISTANT, (ToolCallPart("c1", "write_file", args),))
    msgs = [user("go"), call, *[say(str(i)) for i in range(25)]]
    out = run(msgs)
    assert not out.changed
    assert out.messages[1] is call


def test_results_with_media_are_not_deduplicated_by_text() -> None:
    image = MediaPart("image", url="https://x/chart.png")
    big = "line\n" * 100
    with_media = Message(Role.TOOL, (ToolResultPart("a", (TextPart(big), image)),))
    again = Message(Role.TOOL, (ToolResultPart("b", (TextPart(big), image)),))
    msgs = [user("t"), with_media, again, *[say(str(i)) for i in range(20)]]
    assert not run(msgs, ratio=0.1).changed


def test_oversized_text_parts_are_marked_and_other_parts_skipped() -> None:
    huge = "word " * 6000
    call = ToolCallPart("c", "bash", {"cmd": huge})
    msgs = [user(huge), Message(Role.ASSISTANT, (TextPart(huge), call, TextPart("short")))]
    out = reduce(
        msgs,
        [6000, 12000],
        measure=Measure(18_000, 2, 100_000),
        threshold=8_000,
        config=Reductions(truncate_args=None, dedupe_results=False),
        count_text=lambda text: len(text.split()),
    )
    assert [(o.index, o.part) for o in out.oversized] == [(0, 0), (1, 0)]


def test_a_note_after_the_marker_says_what_a_cut_argument_held_when_that_is_shorter() -> None:
    long = "see src/app/main.py " * 200
    part = ToolCallPart("c1", "write_file", json.dumps({"path": "a.py", "content": long}))
    cfg = TruncateArgs(max_length=200, prefix=10)
    cut = truncate_call(part, cfg, lambda text: f" [{len(text):,} characters]")
    assert cut is not None
    assert (
        json.loads(cut.arguments_text)["content"] == long[:10] + cfg.marker + " [4,000 characters]"
    )
    # A note longer than what it replaces is left out: the cut must save.
    verbose = truncate_call(part, cfg, lambda text: "x" * 5_000)
    assert verbose is not None
    assert json.loads(verbose.arguments_text)["content"] == long[:10] + cfg.marker
