"""What ``synopsis inspect`` reports about a history: token counts by role and by tool, the
largest messages, the share of the model's window, and every validation problem. Pure: it
takes messages and returns a value; printing is the CLI's business.

Message indices are positions in the caller's own list: a top-level system prompt that was
passed apart from it (Anthropic's ``system``, Gemini's ``systemInstruction``) is counted and
validated, but has no index there, so it is reported with ``index=None``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from synopsis.messages import Message, ToolCallPart, ToolResultPart
from synopsis.models import context_window
from synopsis.pairing import pair_tool_calls
from synopsis.tokens import counter_for_model
from synopsis.validation import Problem, check, get_profile
from synopsis.validation.rules import list_index, separate_system

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["LargeMessage", "Report", "RoleRow", "ToolRow", "inspect_history"]

_PREVIEW = 80


@dataclass(frozen=True, slots=True)
class RoleRow:
    name: str
    count: int
    tokens: int
    share: float


@dataclass(slots=True)
class ToolRow:
    name: str
    calls: int = 0
    call_tokens: int = 0
    result_tokens: int = 0


@dataclass(frozen=True, slots=True)
class LargeMessage:
    index: int | None
    """The position in the caller's list; ``None`` for a separate top-level system prompt."""
    role: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class Report:
    path: str
    format: str
    provider: str
    model: str | None
    counter: str
    message_count: int
    total_tokens: int
    window: int | None
    by_role: tuple[RoleRow, ...]
    by_tool: tuple[ToolRow, ...]
    largest: tuple[LargeMessage, ...]
    problems: tuple[Problem, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["window_share"] = self.total_tokens / self.window if self.window else None
        out["problems"] = [
            {
                "index": p.index,
                "part": p.part,
                "rule": p.rule,
                "message": p.message,
                "conservative": p.conservative,
            }
            for p in self.problems
        ]
        return out


def _preview(message: Message) -> str:
    text = " ".join(message.text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def inspect_history(
    messages: Sequence[Message],
    *,
    path: str = "<history>",
    fmt: str = "synopsis",
    model: str | None = None,
    window: int | None = None,
    provider: str = "openai",
) -> Report:
    counter = counter_for_model(model)
    per_message = [counter.count_message(m) for m in messages]
    total = counter.count_messages(messages)
    if window is None and model is not None:
        window = context_window(model)

    roles: dict[str, list[int]] = {}
    for m, n in zip(messages, per_message, strict=True):
        tally = roles.setdefault(m.role.value, [0, 0])
        tally[0] += 1
        tally[1] += n
    body = sum(per_message) or 1
    by_role = tuple(
        RoleRow(name, c, t, t / body)
        for name, (c, t) in sorted(roles.items(), key=lambda kv: -kv[1][1])
    )

    tools: dict[str, ToolRow] = {}
    pairing = pair_tool_calls(messages)
    for mi, m in enumerate(messages):
        for pi, part in enumerate(m.parts):
            if isinstance(part, ToolCallPart):
                row = tools.setdefault(part.name, ToolRow(part.name))
                row.calls += 1
                row.call_tokens += counter.count_text(part.name + part.arguments_text)
            elif isinstance(part, ToolResultPart):
                call = pairing.call_of.get((mi, pi))
                name = (
                    pairing.call_part(messages, call).name
                    if call is not None
                    else part.name or "(unpaired)"
                )
                row = tools.setdefault(name, ToolRow(name))
                row.result_tokens += counter.count_text(part.text)
    by_tool = tuple(sorted(tools.values(), key=lambda r: -(r.call_tokens + r.result_tokens)))

    # ``fmt`` is where ``messages`` were decoded from; the caller knows the indices of that.
    offset = separate_system(messages, fmt)
    order = sorted(range(len(messages)), key=lambda i: -per_message[i])
    largest = tuple(
        LargeMessage(
            list_index(i, offset),
            messages[i].role.value,
            per_message[i],
            _preview(messages[i]),
        )
        for i in order[:20]
    )
    problems = tuple(check(messages, get_profile(provider), offset=offset))
    return Report(
        path=path,
        format=fmt,
        provider=provider,
        model=model,
        counter=getattr(counter, "description", type(counter).__name__),
        message_count=len(messages),
        total_tokens=total,
        window=window,
        by_role=by_role,
        by_tool=by_tool,
        largest=largest,
        problems=problems,
    )
