"""The checks: every provider rule synopsis enforces (docs/message-rules.md), expressed on the
message model. The rules about reasoning are in :mod:`.reasoning_rules`, those about
Anthropic's server tools in :mod:`.server_tools`; what a check finds is a
:class:`~.problems.Problem`.

Rules are stated on the model as the target's converter would send it: consecutive tool messages
become one Anthropic user turn, results held in a user message become OpenAI tool messages, and
so on. Rule ids are ``<family>.<code>`` where docs/message-rules.md numbers the rule
(``openai.C2``, ``anthropic.A1``) and a short slug otherwise.

Some rules cannot be checked from a history alone, so nothing here reports them:

* A9, beyond a missing signature: whether a thinking block and its ``signature`` are
  byte-identical to what the API returned, and were not reordered, merged or produced by
  another model. Only the API holds the key that verifies a signature, and an edited or moved
  block looks like any other.
* A10, preserved thinking: a thinking block is valid only while the system prompt, the tools
  and every message before it are unchanged since it was produced. That needs the history as
  it was when the block was written, which a single history does not carry.
* R7, ``previous_response_id``: which items the server already holds is request and server
  state, not part of the items sent.
* R8 and Anthropic's ``compaction`` blocks: the converters keep them opaque and pass them
  back verbatim, and a compaction keeps every one of them and all before it (see
  :mod:`synopsis.planning.split`), so the only way to break them is to edit them, which
  nothing in synopsis does.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from synopsis.formats._common import hint
from synopsis.messages import (
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    has_results,
    only_results,
)
from synopsis.pairing import Pairing, pair_tool_calls
from synopsis.validation.problems import SYSTEM_PROMPT, Problem, list_index, place
from synopsis.validation.reasoning_rules import ReasoningRules, reasoning_orphans
from synopsis.validation.server_tools import ServerToolRules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.validation.profiles import Profile

__all__ = [
    "SYSTEM_PROMPT",
    "Problem",
    "check",
    "is_blank",
    "list_index",
    "place",
    "reasoning_orphans",
    "result_block",
    "separate_system",
    "top_level_systems",
    "trailing_call_message",
]

_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)

# Rule codes per family for the pairing rules; the family's own numbering where it has one.
_ORPHAN = {"openai": "C1", "responses": "R2", "anthropic": "A2", "gemini": "G2"}
_MISSING = {"openai": "C2", "responses": "R1", "anthropic": "A1", "gemini": "G3"}
_MISPLACED = {"openai": "C1", "responses": "R2", "anthropic": "A1", "gemini": "G2"}
_FIRST_USER = {"anthropic": "A5", "gemini": "G5"}
_EMPTY_TEXT = (
    "text content blocks must contain non-whitespace text",
    "Unable to submit request because it has an empty text parameter",
)
"""What Anthropic and Gemini say of a text part they take for none."""


def result_block(messages: Sequence[Message], call_index: int, profile: Profile) -> range:
    """The messages after ``call_index`` that the target reads as the answer turn."""
    j = call_index + 1
    n = len(messages)
    if profile.result_block == "merged_user":
        while j < n and messages[j].role in (Role.TOOL, Role.USER):
            j += 1
    elif profile.result_block == "single":
        if j < n and messages[j].role is Role.USER:
            j += 1
        else:
            while j < n and messages[j].role is Role.TOOL:
                j += 1
    else:
        while j < n:
            m = messages[j]
            if m.role is Role.TOOL:
                j += 1
            elif m.role is Role.USER and has_results(m):
                j += 1
                if not only_results(m):
                    break
            else:
                break
    return range(call_index + 1, j)


def trailing_call_message(
    messages: Sequence[Message], profile: Profile, pairing: Pairing | None = None
) -> int | None:
    """The index of an assistant message whose calls may still be running: the last message
    with calls, when everything after it is its own answer block (a live agent mid-run)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].tool_calls:
            block = result_block(messages, i, profile)
            if block.stop == len(messages) and all(
                not messages[k].parts or only_results(messages[k]) for k in block
            ):
                return i
            return None
    return None


def is_blank(part: object, profile: Profile) -> bool:
    """Whether ``part`` is text the target takes for none (see ``Profile.blank_is_empty``)."""
    if not isinstance(part, TextPart):
        return False
    return not (part.text.strip() if profile.blank_is_empty else part.text)


def top_level_systems(messages: Sequence[Message], profile: Profile) -> int:
    """How many leading messages the target sends as its top-level system prompt (Anthropic
    ``system``, Gemini ``systemInstruction``); 0 for targets that keep systems in the list."""
    if profile.system != "leading":
        return 0
    n = 0
    for m in messages:
        if m.role not in _SYSTEM_ROLES:
            break
        # The Anthropic converter writes a system message that came from inside ``messages``
        # back there; only the request's own ``system`` (or a foreign one) is lifted.
        if (
            profile.family == "anthropic"
            and m.wire.get("format") == "anthropic"
            and hint(m, "anthropic", "system") is None
        ):
            break
        n += 1
    return n


class _Checker(ReasoningRules, ServerToolRules):
    def run(self) -> list[Problem]:
        if not self.messages:
            self.add(None, "empty", "the history has no messages", family="history")
            return self.problems
        self.shapes()
        pairing = pair_tool_calls(self.messages)
        self.pairing_rules(pairing)
        if self.fam == "anthropic":
            self.server_tool_rules()
        self.system_rules()
        self.order_rules()
        if self.profile.nonempty:
            self.empty_rules()
        if self.profile.thinking_rules:
            self.thinking_rules()
        if self.profile.reasoning_followed:
            self.reasoning_rules()
        if self.profile.reasoning_required:
            self.reasoning_required_rules()
        if not self.profile.store:
            self.store_rules()
        if self.profile.thought_signatures:
            self.signature_rules()
        return sorted(self.problems, key=lambda p: -1 if p.index is None else p.index)

    # -- the model's own shape: parts in roles that can carry them
    def shapes(self) -> None:
        for i, m in enumerate(self.messages):
            seen: set[str] = set()
            for k, part in enumerate(m.parts):
                if isinstance(part, ToolCallPart):
                    if m.role is not Role.ASSISTANT:
                        self.add(
                            i,
                            "call_role",
                            "only an assistant message can call a tool",
                            k,
                            family="tool",
                        )
                    if part.call_id in seen:
                        code = "C3" if self.fam == "openai" else "duplicate_id"
                        self.add(
                            i, code, f"tool call id {part.call_id!r} is used twice in one turn", k
                        )
                    seen.add(part.call_id)
                elif isinstance(part, ToolResultPart) and m.role not in (Role.TOOL, Role.USER):
                    self.add(
                        i,
                        "result_role",
                        "a tool result must be in a tool or user message",
                        k,
                        family="tool",
                    )
            if m.role is Role.TOOL and not only_results(m):
                self.add(
                    i,
                    "tool_message",
                    "a tool message must hold tool results and nothing else",
                    family="tool",
                )
            if (
                self.profile.empty_tool_calls
                and m.wire.get("format") == "openai"
                and m.wire.get("tool_calls_empty")
                and not m.tool_calls
            ):
                self.add(
                    i,
                    "C4",
                    "'tool_calls' is an empty array; expected at least one call",
                    conservative=True,
                )

    # -- C1/C2, R1/R2, A1/A2, G2/G3
    def pairing_rules(self, pairing: Pairing) -> None:
        msgs, prof = self.messages, self.profile
        for mi, pi in pairing.orphans:
            cid = msgs[mi].parts[pi]
            assert isinstance(cid, ToolResultPart)
            turn = self._call_turn_answered_by(mi) if self.fam == "gemini" else None
            if turn is not None:
                # Gemini pairs by name and count: one response too many breaks the count.
                self.add(
                    mi,
                    "G3",
                    f"function response {cid.call_id!r} has no call left to answer in "
                    f"{self.place(turn)}: the number of function response parts must equal the "
                    "number of function call parts of the function call turn",
                    pi,
                )
                continue
            self.add(
                mi,
                _ORPHAN[self.fam],
                f"tool result for {cid.call_id!r} answers no earlier tool call",
                pi,
            )
        trailing = trailing_call_message(msgs, prof, pairing)
        for mi, pi in pairing.open_calls:
            if mi == trailing:
                continue
            waiting = pairing.call_part(msgs, (mi, pi))
            self.add(
                mi,
                _MISSING[self.fam],
                f"tool call {waiting.call_id!r} has no result"
                + (" in the next message" if prof.results_adjacent else ""),
                pi,
            )
        if not prof.results_adjacent:
            return
        blocks: dict[int, range] = {}
        for call, results in pairing.result_of.items():
            ci = call[0]
            if ci not in blocks:
                blocks[ci] = result_block(msgs, ci, prof)
            for ri, rp in results:
                if ri not in blocks[ci]:
                    part = pairing.result_part(msgs, (ri, rp))
                    self.add(
                        ri,
                        _MISPLACED[self.fam],
                        f"tool result for {part.call_id!r} is "
                        f"not in the turn right after its call ({self.place(ci)})",
                        rp,
                    )
        if prof.results_first:
            for ci, block in blocks.items():
                self.results_first(ci, block)

    def _call_turn_answered_by(self, mi: int) -> int | None:
        """The call turn whose answer block holds message ``mi``, if any."""
        j = mi - 1
        while j >= 0 and self.messages[j].role is not Role.ASSISTANT:
            j -= 1
        if (
            j >= 0
            and self.messages[j].tool_calls
            and mi in result_block(self.messages, j, self.profile)
        ):
            return j
        return None

    def results_first(self, ci: int, block: range) -> None:
        other_seen = False
        for k in block:
            for pi, part in enumerate(self.messages[k].parts):
                if isinstance(part, ToolResultPart):
                    if other_seen:
                        self.add(
                            k,
                            "A3",
                            "tool_result blocks must come first in the user "
                            f"turn answering {self.place(ci)}",
                            pi,
                        )
                        return
                else:
                    other_seen = True

    # -- system and developer messages
    def system_rules(self) -> None:
        prof, msgs = self.profile, self.messages
        top = top_level_systems(msgs, prof)
        leading = True
        for i, m in enumerate(msgs):
            is_system = m.role in _SYSTEM_ROLES
            if m.role is Role.DEVELOPER and not prof.developer_role:
                self.add(
                    i,
                    "developer_role",
                    "this target does not know the 'developer' role; use 'system'",
                    family=prof.name,
                )
            if not is_system:
                leading = False
                continue
            if prof.system == "first_only" and i > 0:
                self.add(
                    i,
                    "system_position",
                    "System message must be at the beginning.",
                    family=prof.name,
                )
            elif prof.system == "leading" and i >= top:
                after_user = i > 0 and msgs[i - 1].role in (Role.USER, Role.TOOL)
                if prof.mid_system and after_user:
                    continue
                if leading:
                    text = (
                        "a system message inside the message list is accepted only right "
                        "after a user turn, and only by models that allow mid-conversation "
                        "system messages; send it as the top-level system prompt"
                    )
                elif prof.mid_system:
                    text = "a mid-conversation system message must come right after a user turn"
                else:
                    text = (
                        "a system message may only open the "
                        "history (it becomes the top-level system prompt)"
                    )
                self.add(i, "system_position", text)

    # -- who may speak first, alternation, what a call turn follows
    def order_rules(self) -> None:
        prof, msgs = self.profile, self.messages
        body = [i for i, m in enumerate(msgs) if m.role not in _SYSTEM_ROLES]
        if not body and (prof.first_user or prof.nonempty):
            self.add(
                None, "no_messages", "the history holds only system messages", family="history"
            )
            return
        numbered = _FIRST_USER.get(prof.family)
        if prof.first_user and body and msgs[body[0]].role is not Role.USER:
            self.add(
                body[0],
                numbered or "first_user",
                "the first message after the system prompt should be a user message",
                conservative=prof.family != "openai",
                family=prof.family if numbered else prof.name,
            )
        last = body[-1] if body else None
        if (
            prof.last_user
            and last is not None
            and msgs[last].role is Role.ASSISTANT
            # a trailing call still waiting for its result is an agent mid-run, not an end
            and last != trailing_call_message(msgs, prof)
        ):
            self.add(
                last,
                numbered or "last_user",
                "the history should end with a user turn or a function response, not a model turn",
                conservative=True,
                family=prof.family if numbered else prof.name,
            )
        if prof.alternation:
            for a, b in itertools.pairwise(body):
                ra, rb = msgs[a].role, msgs[b].role
                if ra is rb and ra in (Role.USER, Role.ASSISTANT):
                    self.add(
                        b,
                        "alternation",
                        "Conversation roles must alternate user/assistant/user/assistant/...",
                        family=prof.name,
                    )
        if prof.call_after_user:
            for n, i in enumerate(body):
                if not msgs[i].tool_calls:
                    continue
                prev = msgs[body[n - 1]] if n else None
                if prev is None or prev.role is Role.ASSISTANT:
                    self.add(
                        i,
                        "G1",
                        "Please ensure that function call turn comes immediately "
                        "after a user turn or after a function response turn.",
                    )

    # -- A4 and Gemini's non-empty parts
    def empty_rules(self) -> None:
        last = len(self.messages) - 1
        for i, m in enumerate(self.messages):
            if m.role in _SYSTEM_ROLES:
                continue
            final_ok = (
                i == last and m.role is Role.ASSISTANT and self.profile.allow_empty_final_assistant
            )
            if not m.parts or all(is_blank(p, self.profile) for p in m.parts):
                if not final_ok:
                    code = "A4" if self.fam == "anthropic" else "empty"
                    self.add(
                        i,
                        code,
                        "all messages must have non-empty content except for the "
                        "optional final assistant message",
                    )
                continue
            for k, part in enumerate(m.parts):
                if is_blank(part, self.profile):
                    self.add(i, "empty_text", _EMPTY_TEXT[self.fam == "gemini"], k)


def check(messages: Sequence[Message], profile: Profile, *, offset: int = 0) -> list[Problem]:
    """Every problem ``messages`` has for ``profile``, in message order.

    ``offset`` is how many leading ``messages`` are not in the caller's own list (a system
    prompt passed apart from it, see :func:`separate_system`): indices are given in that list,
    and a problem of those messages has ``index=None`` and says where it is.
    """
    return _Checker(messages, profile, offset).run()


def separate_system(messages: Sequence[Message], format: str) -> int:
    """How many of the leading ``messages``, decoded from ``format``, are a top-level system
    prompt that came apart from the caller's list (Anthropic's ``system``, Gemini's
    ``systemInstruction``, Responses ``instructions``, or ``system=`` for any format, passed
    so or in a request body): 1 or 0. An index into
    ``messages`` less this is an index into the caller's own list."""
    if not messages:
        return 0
    # Only the decoder of that top-level prompt notes its form; a system message from inside
    # the list has no such note.
    return int(hint(messages[0], format, "system") is not None)
