"""Each ordering, emptiness, thinking, signature and reasoning rule reports exactly where the
fault is (message and part), under which rule id, and in which words: a caller shows these to
a person, and repairs act on the index and part. Every case compares the whole problem list,
so a problem pointed at the wrong place, given another id or worded otherwise fails it."""

from __future__ import annotations

import dataclasses

import pytest

from synopsis.messages import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.validation import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    OPENAI_STRICT,
    RESPONSES,
    Problem,
    Profile,
    check,
    validate,
)

FIRST_USER = "the first message after the system prompt should be a user message"
LAST_USER = "the history should end with a user turn or a function response, not a model turn"
ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
CALL_AFTER_USER = (
    "Please ensure that function call turn comes immediately "
    "after a user turn or after a function response turn."
)
ONLY_SYSTEMS = "the history holds only system messages"
EMPTY = "all messages must have non-empty content except for the optional final assistant message"
EMPTY_TEXT = "text content blocks must contain non-whitespace text"
UNSIGNED = (
    "a thinking block must carry the `signature` the API returned with it; "
    "without one the request is rejected"
)
THINKING_FIRST = (
    "If an assistant message contains any thinking blocks, the "
    "first block must be thinking or redacted_thinking."
)
THINKING_LAST = "The final block in an assistant message cannot be `thinking`."
THINKING_DISABLED = (
    "When thinking is disabled, an `assistant` message in the "
    "final position cannot contain `thinking`."
)
THINKING_ENABLED = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block."
)
REASONING_ALONE = "Item of type 'reasoning' was provided without its required following item."
NO_SUMMARY = "a reasoning item must keep its required field `summary` (send [] when there is none)"
NO_REASONING = "Item of type 'message' was provided without its required 'reasoning' item."
NO_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts: "
    "the first call of each step in the current turn must carry the "
    "signature the model returned with it"
)

# Profiles whose name is not their family's, so a rule id built from the wrong one shows.
CLAUDE = dataclasses.replace(ANTHROPIC, name="claude-hosted")
GEMINI_HOSTED = dataclasses.replace(GEMINI, name="gemini-hosted")
ENDS_WITH_USER = dataclasses.replace(OPENAI, name="openai-ends-user", last_user=True)
THINKING_ON = dataclasses.replace(ANTHROPIC, thinking=True)
THINKING_OFF = dataclasses.replace(ANTHROPIC, thinking=False)
REASONING_REQUIRED = dataclasses.replace(RESPONSES, reasoning_required=True)
GEMINI_3 = dataclasses.replace(GEMINI, thought_signatures=True)


def system(text: str = "be brief") -> Message:
    return Message(Role.SYSTEM, (TextPart(text),))


def user(text: str = "go") -> Message:
    return Message(Role.USER, (TextPart(text),))


def assistant(*parts: TextPart | ToolCallPart | ReasoningPart) -> Message:
    return Message(Role.ASSISTANT, parts)


def say(text: str = "done") -> Message:
    return assistant(TextPart(text))


def calls(cid: str) -> ToolCallPart:
    return ToolCallPart(cid, "bash", "{}")


def tool(cid: str) -> Message:
    return Message(Role.TOOL, (ToolResultPart(cid, "ok"),))


def answer(cid: str) -> Message:
    """A result held in a user message, as Anthropic and Gemini send it."""
    return Message(Role.USER, (ToolResultPart(cid, "ok"),))


def signed() -> ReasoningPart:
    return ReasoningPart("plan", signature="sig")


def reasoning_item() -> Message:
    part = ReasoningPart(text="plan", encrypted="enc", extra={"summary": []})
    return Message(Role.ASSISTANT, (part,), wire={"format": "responses", "item": "reasoning"})


def gemini_call(cid: str, *, signature: str | None) -> Message:
    extra = {} if signature is None else {"thoughtSignature": signature}
    part = ToolCallPart(cid, "bash", "{}", extra=extra)
    return Message(Role.ASSISTANT, (part,), wire={"format": "gemini"})


CASES: list[tuple[str, list[Message], Profile, list[Problem]]] = [
    # -- only system messages
    (
        "only systems, a target that wants a user first but allows empty messages",
        [system()],
        OPENAI_STRICT,
        [Problem(None, "history.no_messages", ONLY_SYSTEMS)],
    ),
    (
        "only systems, a target that wants a user first and no empty messages",
        [system()],
        ANTHROPIC,
        [Problem(None, "history.no_messages", ONLY_SYSTEMS)],
    ),
    # -- who speaks first
    (
        "an assistant first, a target with no number for the rule and not conservative",
        [system(), say("hi"), user()],
        OPENAI_STRICT,
        [Problem(1, "openai-strict.first_user", FIRST_USER)],
    ),
    (
        "an assistant first, numbered by the family even on a profile named otherwise",
        [say("hi"), user()],
        CLAUDE,
        [Problem(0, "anthropic.A5", FIRST_USER, conservative=True)],
    ),
    # -- who speaks last
    (
        "a model turn last, numbered by the family even on a profile named otherwise",
        [user(), say()],
        GEMINI_HOSTED,
        [Problem(1, "gemini.G5", LAST_USER, conservative=True)],
    ),
    (
        "a model turn last, named after a profile with no number for the rule",
        [user(), say()],
        ENDS_WITH_USER,
        [Problem(1, "openai-ends-user.last_user", LAST_USER, conservative=True)],
    ),
    # -- alternation
    (
        "two user turns in a row",
        [system(), user("a"), user("b"), say()],
        OPENAI_STRICT,
        [Problem(2, "openai-strict.alternation", ALTERNATE)],
    ),
    # -- a function call turn follows a user turn or a function response
    (
        "a call right after a model turn",
        [user(), say("let me look"), assistant(calls("c1")), answer("c1")],
        GEMINI,
        [Problem(2, "gemini.G1", CALL_AFTER_USER)],
    ),
    # -- empty messages and blocks
    (
        "an empty user message after a leading system message",
        [system(), user(), say(), Message(Role.USER), say()],
        ANTHROPIC,
        [Problem(3, "anthropic.A4", EMPTY)],
    ),
    (
        "a user message of blank text is empty as a whole, not block by block",
        [user(), say(), Message(Role.USER, (TextPart("  "), TextPart("\n"))), say()],
        ANTHROPIC,
        [Problem(2, "anthropic.A4", EMPTY)],
    ),
    (
        "an empty message on a target outside Anthropic's numbering",
        [user(), say(), Message(Role.USER), say(), user()],
        GEMINI,
        [Problem(2, "gemini.empty", EMPTY)],
    ),
    (
        "one blank block beside text",
        [user(), assistant(TextPart("ok"), TextPart(" ")), user()],
        ANTHROPIC,
        [Problem(1, "anthropic.empty_text", EMPTY_TEXT, 1)],
    ),
    # -- thinking blocks
    (
        "a thinking block without its signature",
        [user(), assistant(ReasoningPart("plan"), TextPart("done"))],
        ANTHROPIC,
        [Problem(1, "anthropic.A9", UNSIGNED, 0)],
    ),
    (
        "a thinking block after text",
        [user(), assistant(TextPart("so"), signed(), TextPart("done"))],
        ANTHROPIC,
        [Problem(1, "anthropic.A6", THINKING_FIRST, 1)],
    ),
    (
        "thinking as the last block",
        [user(), assistant(signed(), TextPart("so"), signed())],
        ANTHROPIC,
        [Problem(1, "anthropic.A8", THINKING_LAST, 2)],
    ),
    (
        "thinking in the final assistant message while thinking is off",
        [user(), assistant(signed(), TextPart("a")), user(), assistant(signed(), TextPart("b"))],
        THINKING_OFF,
        [Problem(3, "anthropic.A7", THINKING_DISABLED)],
    ),
    # -- the tool loop still running at the end starts with thinking when thinking is on
    (
        "a loop with no user turn before it starts at the first message",
        [assistant(calls("a")), answer("a"), assistant(calls("b"))],
        THINKING_ON,
        [
            Problem(0, "anthropic.A5", FIRST_USER, conservative=True),
            Problem(0, "anthropic.A6", THINKING_ENABLED, 0),
        ],
    ),
    (
        "a user turn right before the final assistant message ends the walk back",
        [user(), assistant(calls("x")), user("new"), assistant(signed(), TextPart("done"))],
        THINKING_ON,
        [Problem(1, "anthropic.A1", "tool call 'x' has no result in the next message", 0)],
    ),
    (
        "a user message of results belongs to the loop",
        [
            user(),
            assistant(calls("a")),
            answer("a"),
            assistant(signed(), calls("b")),
            answer("b"),
            assistant(signed(), TextPart("done")),
        ],
        THINKING_ON,
        [Problem(1, "anthropic.A6", THINKING_ENABLED, 0)],
    ),
    # -- Responses reasoning items
    (
        "a reasoning item with nothing after it",
        [user(), say(), user("more"), reasoning_item()],
        RESPONSES,
        [Problem(3, "responses.R3", REASONING_ALONE)],
    ),
    (
        "an output message in the opening turn without its reasoning",
        [say("first"), reasoning_item(), say("second"), user()],
        REASONING_REQUIRED,
        [Problem(0, "responses.R4", NO_REASONING)],
    ),
    (
        "reasoning two assistant items back still covers an output message",
        [assistant(calls("a")), tool("a"), reasoning_item(), say("partial"), say("done")],
        REASONING_REQUIRED,
        [],
    ),
    # -- Gemini 3 thought signatures
    (
        "an unsigned call with no user turn before it",
        [gemini_call("a", signature=None)],
        GEMINI_3,
        [
            Problem(0, "gemini.G5", FIRST_USER, conservative=True),
            Problem(0, "gemini.G1", CALL_AFTER_USER),
            Problem(0, "gemini.G4", NO_SIGNATURE, 0),
        ],
    ),
    (
        "model text in the current turn is not a call step",
        [user(), gemini_call("a", signature="s"), answer("a"), say()],
        GEMINI_3,
        [Problem(3, "gemini.G5", LAST_USER, conservative=True)],
    ),
    (
        "an unsigned call of an earlier turn is let be, one of the current turn is not",
        [
            user(),
            gemini_call("a", signature=None),
            answer("a"),
            user("next"),
            say("looking"),
            gemini_call("b", signature=None),
            answer("b"),
        ],
        GEMINI_3,
        [Problem(5, "gemini.G1", CALL_AFTER_USER), Problem(5, "gemini.G4", NO_SIGNATURE, 0)],
    ),
]


@pytest.mark.parametrize(
    ("history", "profile", "expected"),
    [pytest.param(h, p, e, id=name) for name, h, p, e in CASES],
)
def test_each_rule_reports_where_and_what(
    history: list[Message], profile: Profile, expected: list[Problem]
) -> None:
    assert check(history, profile) == expected


def test_a_reasoning_item_decoded_without_its_summary_is_r6() -> None:
    history = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "e"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ]
    assert validate(history, "responses") == [Problem(1, "responses.R6", NO_SUMMARY)]
