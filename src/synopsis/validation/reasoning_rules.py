"""The rules about reasoning, as each provider states them: Anthropic's thinking blocks (A6 to
A9), Responses reasoning items (R3 to R6) and Gemini 3's thought signatures (G4). The checker
of :mod:`.rules` runs them when its profile asks for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synopsis.formats._common import hint
from synopsis.messages import (
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    has_results,
    is_reasoning_only,
    opens_turn,
)
from synopsis.validation.problems import Checking

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ReasoningRules", "reasoning_orphans"]

_SIGNATURE_KEYS = ("thoughtSignature", "thought_signature")


def _sends_reasoning(m: Message, fmt: str) -> bool:
    """Whether the ``fmt`` converter sends this message's reasoning: reasoning decoded from
    another provider is dropped (its signature means nothing there), so no rule about it
    applies. A message built by hand is taken as the target's own."""
    return m.wire.get("format") in (None, fmt)


def _compactions_first(m: Message) -> int:
    """How many Anthropic ``compaction`` blocks open ``m``: the API writes its summary at the
    start of the assistant turn it goes on with, ahead of that turn's thinking."""
    n = 0
    while n < len(m.parts) and isinstance(p := m.parts[n], OpaquePart) and p.kind == "compaction":
        n += 1
    return n


def reasoning_orphans(messages: Sequence[Message]) -> list[int]:
    """Reasoning items not followed by the item they produced (R3)."""
    out: list[int] = []
    for i, m in enumerate(messages):
        if not is_reasoning_only(m):
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        if nxt is None or nxt.role is not Role.ASSISTANT:
            out.append(i)
    return out


class ReasoningRules(Checking):
    """The reasoning rules, as methods of a check."""

    # -- A6/A7/A8
    def thinking_rules(self) -> None:
        msgs, prof = self.messages, self.profile
        last_assistant = max(
            (i for i, m in enumerate(msgs) if m.role is Role.ASSISTANT), default=None
        )
        for i, m in enumerate(msgs):
            if m.role is not Role.ASSISTANT:
                continue
            thinking = [k for k, p in enumerate(m.parts) if isinstance(p, ReasoningPart)]
            if _sends_reasoning(m, "anthropic"):
                for k in thinking:
                    part = m.parts[k]
                    assert isinstance(part, ReasoningPart)
                    if not part.redacted and not part.signature:
                        self.add(
                            i,
                            "A9",
                            "a thinking block must carry the `signature` the API returned "
                            "with it; without one the request is rejected",
                            k,
                        )
            if thinking and thinking[0] != _compactions_first(m):
                self.add(
                    i,
                    "A6",
                    "If an assistant message contains any thinking blocks, the "
                    "first block must be thinking or redacted_thinking.",
                    thinking[0],
                )
            if thinking and thinking[-1] == len(m.parts) - 1:
                self.add(
                    i,
                    "A8",
                    "The final block in an assistant message cannot be `thinking`.",
                    thinking[-1],
                )
            if i == last_assistant and thinking and prof.thinking is False:
                self.add(
                    i,
                    "A7",
                    "When thinking is disabled, an `assistant` message in the "
                    "final position cannot contain `thinking`.",
                )
        if prof.thinking and last_assistant is not None:
            loop = self._current_tool_loop_start(last_assistant)
            first = 0 if loop is None else _compactions_first(msgs[loop])
            if loop is not None and not isinstance(msgs[loop].parts[first], ReasoningPart):
                self.add(
                    loop,
                    "A6",
                    "When `thinking` is enabled, a final `assistant` message "
                    "must start with a thinking block.",
                    first,
                )

    def _current_tool_loop_start(self, last_assistant: int) -> int | None:
        """The first assistant message of the tool loop still running at the end, if any."""
        msgs = self.messages
        start = None
        for i in range(last_assistant, -1, -1):
            m = msgs[i]
            if m.role is Role.USER and not has_results(m):
                break
            if m.role is Role.ASSISTANT and m.tool_calls and m.parts:
                start = i
        return start

    # -- R3 and R6: a reasoning item stays with the item it produced, and keeps its summary
    def reasoning_rules(self) -> None:
        for i in reasoning_orphans(self.messages):
            self.add(
                i,
                "R3",
                "Item of type 'reasoning' was provided without its required following item.",
            )
        for i, m in enumerate(self.messages):
            if hint(m, "responses", "missing_summary"):
                self.add(
                    i,
                    "R6",
                    "a reasoning item must keep its required field `summary` (send [] when "
                    "there is none)",
                )

    # -- R4: on newer reasoning models an output message needs its reasoning item
    def reasoning_required_rules(self) -> None:
        msgs = self.messages
        start = 0
        for end in [*(i for i, m in enumerate(msgs) if opens_turn(m)), len(msgs)]:
            turn = range(start, end)
            start = end + 1
            if not any(msgs[k].has_reasoning for k in turn):
                continue
            for i in turn:
                if self._output_without_reasoning(i, turn.start):
                    self.add(
                        i,
                        "R4",
                        "Item of type 'message' was provided without its required "
                        "'reasoning' item.",
                    )

    def _output_without_reasoning(self, i: int, turn_start: int) -> bool:
        """Whether message ``i`` is an output message with no reasoning earlier in its step
        (the run of assistant items one response produced)."""
        m = self.messages[i]
        texts = [k for k, p in enumerate(m.parts) if isinstance(p, TextPart)]
        if m.role is not Role.ASSISTANT or not texts:
            return False
        if any(isinstance(p, ReasoningPart) for p in m.parts[: texts[0]]):
            return False
        j = i - 1
        while j >= turn_start and self.messages[j].role is Role.ASSISTANT:
            if self.messages[j].has_reasoning:
                return False
            j -= 1
        return True

    # -- R5: without server-side storage nothing can be referenced, reasoning goes in full
    def store_rules(self) -> None:
        for i, m in enumerate(self.messages):
            for k, part in enumerate(m.parts):
                if isinstance(part, OpaquePart) and part.kind == "item_reference":
                    self.add(
                        i,
                        "R5",
                        "Items are not persisted when `store` is set to false, so an "
                        "item_reference cannot be resolved; replay the item in full",
                        k,
                    )
                elif (
                    isinstance(part, ReasoningPart)
                    and part.encrypted is None
                    and _sends_reasoning(m, "responses")
                ):
                    self.add(
                        i,
                        "R5",
                        "Items are not persisted when `store` is set to false, so a reasoning "
                        "item must be replayed with its encrypted_content (request "
                        "include=['reasoning.encrypted_content'])",
                        k,
                    )

    # -- G4: Gemini 3 wants the thought signature back on the calls of the current turn
    def signature_rules(self) -> None:
        msgs = self.messages
        users = [i for i, m in enumerate(msgs) if opens_turn(m)]
        for i in range(users[-1] + 1 if users else 0, len(msgs)):
            m = msgs[i]
            first = next((k for k, p in enumerate(m.parts) if isinstance(p, ToolCallPart)), None)
            if m.role is not Role.ASSISTANT or first is None:
                continue
            call = m.parts[first]
            assert isinstance(call, ToolCallPart)
            # The Gemini converter writes a signature back only onto the part it came on.
            signed = m.wire.get("format") == "gemini" and any(
                isinstance(call.extra.get(key), str) for key in _SIGNATURE_KEYS
            )
            if not signed:
                self.add(
                    i,
                    "G4",
                    "Function call is missing a thought_signature in functionCall parts: "
                    "the first call of each step in the current turn must carry the "
                    "signature the model returned with it",
                    first,
                )
