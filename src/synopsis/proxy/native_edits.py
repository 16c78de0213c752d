"""Anthropic's ``context_management.edits``, read and checked: what the client asked for, or
why the proxy cannot do it faithfully (:class:`Refused`, answered as Anthropic's own 400).

Only what the API documents is taken: ``clear_thinking_20251015``,
``clear_tool_uses_20250919`` and ``compact_20260112``, with their documented fields and
defaults. A field or value the proxy would have to guess at is refused, never ignored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "BETAS",
    "CLEAR_THINKING",
    "CLEAR_TOOL_USES",
    "COMPACT",
    "ClearThinking",
    "ClearToolUses",
    "Compact",
    "Edit",
    "Refused",
    "read_edits",
]

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
BETAS = frozenset({"context-management-2025-06-27", "compact-2026-01-12"})
"""The ``anthropic-beta`` values these edits come with: consumed by the proxy."""

_TOOL_USES_TRIGGER = 100_000
_COMPACT_TRIGGER = 150_000
_KEEP_USES = 3
_KEEP_THINKING = 1
"""The API's default is the model's own; the proxy keeps the newest thinking turn."""


class Refused(Exception):
    """A ``context_management`` the proxy cannot emulate faithfully; the message says why."""


@dataclass(frozen=True, slots=True)
class ClearToolUses:
    trigger_kind: str
    """``input_tokens`` or ``tool_uses``."""
    trigger: int
    keep: int
    at_least: int
    exclude: tuple[str, ...]
    inputs: bool


@dataclass(frozen=True, slots=True)
class ClearThinking:
    keep: int | None
    """The newest thinking turns kept; None keeps them all."""


@dataclass(frozen=True, slots=True)
class Compact:
    trigger: int
    instructions: str | None
    pause: bool


Edit: TypeAlias = ClearToolUses | ClearThinking | Compact

_FIELDS = {
    CLEAR_TOOL_USES: {
        "type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"
    },
    CLEAR_THINKING: {"type", "keep"},
    COMPACT: {"type", "trigger", "instructions", "pause_after_compaction"},
}  # fmt: skip


def read_edits(value: object) -> list[Edit]:
    """The edits of a request's ``context_management``, in the order given."""
    if not isinstance(value, dict):
        raise Refused("context_management must be an object")
    extra = set(value) - {"edits"}
    if extra:
        raise Refused(f"context_management.{min(extra)} is not a field synopsis emulates")
    edits = value.get("edits", [])
    if not isinstance(edits, list):
        raise Refused("context_management.edits must be a list")
    out: list[Edit] = []
    seen: set[str] = set()
    for i, edit in enumerate(edits):
        where = f"context_management.edits.{i}"
        if not isinstance(edit, dict) or edit.get("type") not in _FIELDS:
            kind = edit.get("type") if isinstance(edit, dict) else edit
            raise Refused(
                f"{where}: synopsis emulates the edits {', '.join(sorted(_FIELDS))}, not {kind!r}"
            )
        kind = edit["type"]
        unknown = set(edit) - _FIELDS[kind]
        if unknown:
            raise Refused(f"{where}.{min(unknown)} is not a field of {kind}")
        if kind in seen:
            raise Refused(f"{where}: {kind} is given twice")
        seen.add(kind)
        out.append(_READERS[kind](edit, where))
    if CLEAR_THINKING in seen and not isinstance(out[0], ClearThinking) and CLEAR_TOOL_USES in seen:
        raise Refused(f"{CLEAR_THINKING} must come first in context_management.edits")
    return out


def _whole(value: object, where: str, *, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise Refused(f"{where} must be a whole number >= {least}, got {value!r}")
    return value


def _measure(value: object, where: str, kinds: tuple[str, ...], default: int) -> tuple[str, int]:
    """A ``{"type": kind, "value": N}`` field: its kind (one of ``kinds``) and value."""
    if value is None:
        return kinds[0], default
    if not isinstance(value, dict) or set(value) != {"type", "value"}:
        raise Refused(f'{where} must be {{"type": ..., "value": N}}')
    if value["type"] not in kinds:
        raise Refused(f"{where}.type must be {' or '.join(kinds)}, got {value['type']!r}")
    return value["type"], _whole(value["value"], f"{where}.value")


def _clear_tool_uses(edit: dict[str, object], where: str) -> ClearToolUses:
    kind, trigger = _measure(
        edit.get("trigger"), f"{where}.trigger", ("input_tokens", "tool_uses"), _TOOL_USES_TRIGGER
    )
    _, keep = _measure(edit.get("keep"), f"{where}.keep", ("tool_uses",), _KEEP_USES)
    _, least = _measure(edit.get("clear_at_least"), f"{where}.clear_at_least", ("input_tokens",), 0)
    exclude = edit.get("exclude_tools") or []
    if not isinstance(exclude, list) or not all(isinstance(n, str) for n in exclude):
        raise Refused(f"{where}.exclude_tools must be a list of tool names")
    inputs = edit.get("clear_tool_inputs", False)
    if not isinstance(inputs, bool):
        # A list names the tools whose inputs to clear: synopsis cuts the inputs of every
        # cleared use or of none.
        raise Refused(
            f"{where}.clear_tool_inputs: synopsis takes true or false here, not a list of tools"
        )
    return ClearToolUses(kind, trigger, keep, least, tuple(exclude), inputs)


def _clear_thinking(edit: dict[str, object], where: str) -> ClearThinking:
    keep = edit.get("keep")
    if keep is None:
        return ClearThinking(_KEEP_THINKING)
    if keep in ("all", {"type": "all"}):
        return ClearThinking(None)
    _, turns = _measure(keep, f"{where}.keep", ("thinking_turns",), _KEEP_THINKING)
    return ClearThinking(_whole(turns, f"{where}.keep.value", least=1))


def _compact(edit: dict[str, object], where: str) -> Compact:
    _, trigger = _measure(
        edit.get("trigger"), f"{where}.trigger", ("input_tokens",), _COMPACT_TRIGGER
    )
    instructions = edit.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise Refused(f"{where}.instructions must be a string")
    pause = edit.get("pause_after_compaction", False)
    if not isinstance(pause, bool):
        raise Refused(f"{where}.pause_after_compaction must be true or false")
    return Compact(trigger, instructions or None, pause)


_READERS: dict[str, Callable[[dict[str, object], str], Edit]] = {
    CLEAR_TOOL_USES: _clear_tool_uses,
    CLEAR_THINKING: _clear_thinking,
    COMPACT: _compact,
}
