"""The clearing tier's planner: which old tool outputs go, in what order, and when none do."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeAlias

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.errors import ConfigurationError
from synopsis.messages import (
    SUMMARY_TAG,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_summary,
)
from synopsis.planning import CLEARED_MARKER, Cleared, Clearing, clear_outputs
from synopsis.validation import check_between_turns, get_profile
from tests.strategies import valid_history

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def count(message: Message) -> int:
    """Characters as tokens: plain to reason about in the assertions."""
    return sum(len(_text(p)) for p in message.parts) + 4


def _text(part: object) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResultPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return part.arguments_text
    return ""


def placeholder(message: Message, result: ToolResultPart, call: ToolCallPart | None) -> str:
    name = call.name if call is not None else "?"
    return f"{CLEARED_MARKER} {name} {result.call_id}]"


def session(uses: int, size: int = 1000, names: Sequence[str] = ()) -> list[Message]:
    out = [Message(Role.USER, (TextPart("do the task"),))]
    for k in range(uses):
        name = names[k] if k < len(names) else "read_file"
        out.append(
            Message(Role.ASSISTANT, (ToolCallPart(f"c{k}", name, f'{{"path": "f{k}.py"}}'),))
        )
        out.append(Message(Role.TOOL, (ToolResultPart(f"c{k}", chr(97 + k % 26) * size),)))
    out.append(Message(Role.ASSISTANT, (TextPart("done"),)))
    return out


Placeholder: TypeAlias = "Callable[[Message, ToolResultPart, ToolCallPart | None], str | None]"


def run(
    messages: Sequence[Message],
    *,
    target: int = 0,
    config: Clearing | None = None,
    placeholder: Placeholder = placeholder,
    cut_call: Callable[[ToolCallPart], ToolCallPart | None] | None = None,
    whole: Callable[[Message], bool] = lambda _: False,
) -> Cleared:
    return clear_outputs(
        messages,
        [count(m) for m in messages],
        overhead=0,
        target=target,
        window=10_000,
        config=config or Clearing(at_least=0),
        count=count,
        count_text=len,
        placeholder=placeholder,
        cut_call=cut_call,
        whole=whole,
    )


def cleared_ids(messages: Sequence[Message]) -> list[str]:
    return [
        p.call_id
        for m in messages
        for p in m.parts
        if isinstance(p, ToolResultPart) and p.text.startswith(CLEARED_MARKER)
    ]


def test_the_newest_uses_stay_and_older_outputs_go_oldest_first_down_to_the_target() -> None:
    history = session(8)
    total = sum(count(m) for m in history)
    # Two outputs' worth under the total: clearing the two oldest reaches it, no more go.
    result = run(history, target=total - 1900)
    assert cleared_ids(result.messages) == ["c0", "c1"]
    assert result.reached
    assert result.tokens <= total - 1900
    # Down to nothing: everything but the newest three.
    everything = run(history, target=0)
    assert cleared_ids(everything.messages) == [f"c{k}" for k in range(5)]
    assert not everything.reached
    assert everything.reachable == total - everything.tokens
    assert [u.index for u in everything.uses] == [2, 4, 6, 8, 10]
    assert all(u.name == "read_file" and u.saved > 900 for u in everything.uses)


def test_the_kept_tokens_protect_more_than_the_kept_uses() -> None:
    history = session(8)
    result = run(history, config=Clearing(keep_uses=1, keep_tokens=2500, at_least=0))
    # The newest output (1,000) and those that start inside 2,500 tokens of it: 3 kept.
    assert cleared_ids(result.messages) == ["c0", "c1", "c2", "c3", "c4"]
    none = run(history, config=Clearing(keep_uses=0, at_least=0))
    assert len(cleared_ids(none.messages)) == 8


def test_nothing_is_cleared_unless_at_least_the_set_tokens_can_be() -> None:
    history = session(5)
    # Two old outputs of 1,000 characters: under 2,500 reclaimable, nothing changes.
    result = run(history, config=Clearing(at_least=2500))
    assert result.messages == tuple(history)
    assert not result.changed
    assert 1900 < result.reachable < 2000
    assert run(history, config=Clearing(at_least=1900)).changed
    # Unset, a twentieth of the window.
    assert Clearing().least(40_000) == 2_000


def test_excluded_tools_pinned_messages_and_summaries_are_left_whole() -> None:
    history = session(6, names=["grep", "read_file", "grep", "read_file"])
    history[4] = Message(Role.TOOL, history[4].parts, id="keep-me")
    # A summary merged into a user turn that carries a result (Anthropic's alternation).
    call = Message(Role.ASSISTANT, (ToolCallPart("s", "read_file", "{}"),))
    summary = Message(Role.USER, (TextPart(f"{SUMMARY_TAG} old"), ToolResultPart("s", "q" * 900)))
    assert is_summary(summary)
    result = run(
        [*history[:1], call, summary, *history[1:]],
        config=Clearing(exclude_tools=frozenset({"grep"}), at_least=0),
        whole=lambda m: m.id == "keep-me",
    )
    assert cleared_ids(result.messages) == []
    assert run(history, config=Clearing(at_least=0)).changed


def test_a_placeholder_is_never_cleared_again_and_a_refused_or_longer_one_is_not_used() -> None:
    history = session(6)
    once = run(history)
    again = run(once.messages)
    assert again.messages == once.messages
    assert not again.changed
    refused = run(history, placeholder=lambda m, r, c: None)
    assert not refused.changed
    longer = run(history, placeholder=lambda m, r, c: "x" * 5000)
    assert not longer.changed


def test_a_result_without_its_call_is_named_by_itself() -> None:
    history = [
        Message(Role.USER, (TextPart("go"),)),
        Message(Role.TOOL, (ToolResultPart("lost", "z" * 900, name="fetch"),)),
        Message(Role.TOOL, (ToolResultPart("gone", "y" * 900),)),
    ]
    result = run(history, config=Clearing(keep_uses=0, at_least=0))
    assert [u.name for u in result.uses] == ["fetch", "a tool"]


def test_clearing_inputs_cuts_the_calls_of_cleared_outputs_only() -> None:
    history = session(5)
    history = [
        replace(m, parts=(replace(m.tool_calls[0], arguments='{"content": "' + "w" * 3000 + '"}'),))
        if m.tool_calls
        else m
        for m in history
    ]

    def cut(call: ToolCallPart) -> ToolCallPart | None:
        return (
            replace(call, arguments='{"content": "cut"}')
            if "w" * 100 in call.arguments_text
            else None
        )

    result = run(history, config=Clearing(clear_inputs=True, at_least=0), cut_call=cut)
    calls = [p for m in result.messages for p in m.tool_calls]
    assert [c.arguments_text for c in calls[:2]] == ['{"content": "cut"}'] * 2
    assert all("w" * 100 in c.arguments_text for c in calls[2:])
    # What the cut calls saved counts toward the uses that caused them.
    assert all(u.saved > 3900 for u in result.uses)
    plain = run(history, config=Clearing(at_least=0), cut_call=cut)
    assert all("w" * 100 in c.arguments_text for m in plain.messages for c in m.tool_calls)
    # A call already too short to cut is left as it was.
    short = run(session(5), config=Clearing(clear_inputs=True, at_least=0), cut_call=cut)
    assert [m.tool_calls for m in short.messages] == [m.tool_calls for m in session(5)]


@pytest.mark.parametrize(
    ("field", "value"),
    [("keep_uses", -1), ("keep_tokens", True), ("at_least", 1.5), ("keep_uses", "3")],
)
def test_a_bad_setting_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=f"{field} must be a whole number >= 0"):
        Clearing(**{field: value})  # type: ignore[arg-type]


@given(
    history=valid_history(),
    keep=st.integers(0, 4),
    target=st.integers(0, 5000),
    inputs=st.booleans(),
)
def test_clearing_keeps_every_pair_and_message_and_only_shortens_outputs(
    history: list[Message], keep: int, target: int, inputs: bool
) -> None:
    def cut(call: ToolCallPart) -> ToolCallPart | None:
        return replace(call, arguments="{}") if len(call.arguments_text) > 2 else None

    result = run(
        history,
        target=target,
        config=Clearing(keep_uses=keep, at_least=0, clear_inputs=inputs),
        cut_call=cut,
    )
    out = result.messages
    assert len(out) == len(history)
    assert [m.role for m in out] == [m.role for m in history]
    for before, after in zip(history, out, strict=True):
        assert [type(p) for p in before.parts] == [type(p) for p in after.parts]
        assert [getattr(p, "call_id", None) for p in before.parts] == [
            getattr(p, "call_id", None) for p in after.parts
        ]
        assert count(after) <= count(before)
    assert result.tokens <= result.tokens_before
    assert not check_between_turns(out, get_profile("openai")) or check_between_turns(
        history, get_profile("openai")
    )
    # By place, not by call id: a history may use one id in two turns (its older use is fair
    # game for clearing).
    places = [
        (i, j)
        for i, m in enumerate(history)
        for j, p in enumerate(m.parts)
        if isinstance(p, ToolResultPart)
    ]
    for i, j in places[len(places) - keep :] if keep else []:
        kept, was = out[i].parts[j], history[i].parts[j]
        assert isinstance(was, ToolResultPart)
        assert kept == was or was.text.startswith(CLEARED_MARKER)


def test_nothing_before_start_is_cleared() -> None:
    history = session(8)
    result = clear_outputs(
        history,
        [count(m) for m in history],
        overhead=0,
        target=0,
        window=10_000,
        config=Clearing(at_least=0),
        count=count,
        count_text=len,
        placeholder=placeholder,
        start=7,  # after the fourth use's output
    )
    assert cleared_ids(result.messages) == ["c3", "c4"]
