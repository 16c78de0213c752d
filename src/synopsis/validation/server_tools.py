"""Anthropic's server tools as the API pairs them: a ``server_tool_use`` (or ``mcp_tool_use``)
block is answered by its result block (``web_search_tool_result``, ``web_fetch_tool_result``,
``code_execution_tool_result``, ``mcp_tool_result`` ...) later in the same assistant turn,
since the server ran the tool while it wrote that turn. The converter keeps these blocks
opaque; the checker of :mod:`.rules` runs these rules for the Anthropic family.

An assistant turn is a run of consecutive assistant messages: the API merges them into one.
A use left open at the very end of the history is a turn the server paused (``stop_reason``
``pause_turn``): the client sends it back as it came for the server to go on, so it is valid
there and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from synopsis.messages import Message, OpaquePart, Role
from synopsis.validation.problems import Checking

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ServerToolRules", "is_server_result", "is_server_use"]

_USES = frozenset({"server_tool_use", "mcp_tool_use"})
_Place = tuple[int, int]


def is_server_use(part: object) -> TypeGuard[OpaquePart]:
    """Whether ``part`` is a block of a tool the server runs (or an MCP server it calls)."""
    return isinstance(part, OpaquePart) and part.kind in _USES


def is_server_result(part: object) -> TypeGuard[OpaquePart]:
    """Whether ``part`` is the result block of a server tool (every ``*_tool_result`` but the
    client's own ``tool_result``)."""
    return (
        isinstance(part, OpaquePart)
        and part.kind.endswith("_tool_result")
        and part.kind != "tool_result"
    )


def _blocks(message: Message) -> bool:
    """Whether the Anthropic converter sends ``message``'s opaque parts as blocks (another
    format's items become text there, and pair with nothing)."""
    return message.wire.get("format") == "anthropic"


class ServerToolRules(Checking):
    """The server tool rules, as methods of a check."""

    # -- A1/A2 for server tools: the use and its result in one assistant turn
    def server_tool_rules(self) -> None:
        msgs = self.messages
        i = 0
        while i < len(msgs):
            if msgs[i].role is not Role.ASSISTANT:
                self._results_without_use(i)
                i += 1
                continue
            end = i
            while end < len(msgs) and msgs[end].role is Role.ASSISTANT:
                end += 1
            self._turn(range(i, end), paused=end == len(msgs))
            i = end

    def _turn(self, turn: Sequence[int], *, paused: bool) -> None:
        waiting: dict[object, list[_Place]] = {}
        for mi in turn:
            message = self.messages[mi]
            if not _blocks(message):
                continue
            for pi, part in enumerate(message.parts):
                if is_server_use(part):
                    waiting.setdefault(part.raw.get("id"), []).append((mi, pi))
                elif is_server_result(part):
                    uses = waiting.get(part.raw.get("tool_use_id"))
                    if uses:
                        uses.pop(0)
                    else:
                        self._orphan(mi, pi, part)
        if paused:
            return
        for use_id, places in waiting.items():
            for mi, pi in places:
                self.add(
                    mi,
                    "A1",
                    f"server tool use {use_id!r} has no result block after it in the same "
                    "assistant turn: the server's result must be sent back with its use",
                    pi,
                )

    def _results_without_use(self, mi: int) -> None:
        message = self.messages[mi]
        if not _blocks(message):
            return
        for pi, part in enumerate(message.parts):
            if is_server_result(part):
                self._orphan(mi, pi, part)

    def _orphan(self, mi: int, pi: int, part: OpaquePart) -> None:
        self.add(
            mi,
            "A2",
            f"unexpected `tool_use_id` found in `{part.kind}` blocks: "
            f"{part.raw.get('tool_use_id')!r}. Each `{part.kind}` block must have a "
            "corresponding server tool use block before it in the same assistant turn",
            pi,
        )
