"""The questions asked of one message, each meaning under its own name."""

from __future__ import annotations

import pytest

from synopsis.formats import anthropic, responses
from synopsis.messages import (
    SUMMARY_TAG,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolResultPart,
    after_compaction,
    has_results,
    holds_compaction,
    is_person_message,
    is_reasoning_only,
    is_summary,
    is_summary_text,
    only_results,
    opens_turn,
)

RESULT = ToolResultPart("call_1", (TextPart("42"),))
TEXT = TextPart("and now the next step")


@pytest.mark.parametrize(
    ("parts", "person", "opens", "has", "only"),
    [
        ((TEXT,), True, True, False, False),
        ((RESULT,), False, False, True, True),
        # An Anthropic user turn answering a call and saying more: not a person's own message
        # (a history is not cut before it), yet the provider reads it as a new turn.
        ((RESULT, TEXT), False, True, True, False),
        ((), True, True, False, False),
    ],
)
def test_the_two_meanings_of_a_user_message(
    parts: tuple[TextPart | ToolResultPart, ...], person: bool, opens: bool, has: bool, only: bool
) -> None:
    message = Message(Role.USER, parts)
    assert is_person_message(message) is person
    assert opens_turn(message) is opens
    assert has_results(message) is has
    assert only_results(message) is only


def test_only_a_user_message_is_a_person_message_or_opens_a_turn() -> None:
    for role in (Role.ASSISTANT, Role.SYSTEM, Role.TOOL):
        message = Message(role, (TEXT,))
        assert not is_person_message(message)
        assert not opens_turn(message)


def test_a_summary_is_known_by_the_text_it_opens_with() -> None:
    text = f"  {SUMMARY_TAG} id='s1'>the story so far"
    assert is_summary_text(text)
    assert not is_summary_text(f"quoted: {SUMMARY_TAG}")
    assert is_summary(Message(Role.USER, (TextPart(text),)))
    assert not is_summary(Message(Role.USER, (TEXT, TextPart(SUMMARY_TAG))))
    assert not is_summary(Message(Role.USER, (RESULT,)))


def test_reasoning_only() -> None:
    thought = ReasoningPart("thinking")
    assert is_reasoning_only(Message(Role.ASSISTANT, (thought,)))
    assert not is_reasoning_only(Message(Role.ASSISTANT, (thought, TEXT)))
    assert not is_reasoning_only(Message(Role.ASSISTANT, ()))


def test_a_providers_compaction_is_known_by_its_part() -> None:
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"}
    block = {"type": "compaction", "content": "Summary so far"}
    (openai,) = responses.decode([item])
    (claude,) = anthropic.decode(
        [{"role": "assistant", "content": [block, {"type": "text", "text": "on"}]}]
    )
    assert holds_compaction(openai)
    assert holds_compaction(claude)
    (trigger,) = responses.decode([{"type": "compaction_trigger"}])
    assert not holds_compaction(trigger)  # a request to compact, not a compaction
    assert not holds_compaction(Message(Role.USER, (TEXT,)))


def test_after_compaction_is_just_after_the_last_providers_compaction() -> None:
    plain = Message(Role.USER, (TextPart("hi"),))
    packed = Message(Role.ASSISTANT, (OpaquePart(kind="compaction", raw={"type": "compaction"}),))
    assert after_compaction([]) == 0
    assert after_compaction([plain, plain]) == 0
    assert after_compaction([plain, packed, plain, packed, plain]) == 4
    assert after_compaction([packed]) == 1
