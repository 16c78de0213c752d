"""Which conversation a request belongs to.

The client keeps its history and sends it whole every time; the proxy must know which
session's summary stands for its start. In order: the ``x-synopsis-session`` header, as the
client gave it; a client's own session header (Claude Code's ``x-claude-code-session-id``),
with the conversation's opening, since a client sends the same id for its sub-agents and its
side requests, which are other conversations; else the opening alone: the whole leading system
run, the tool names and the first user message. Keys made by the proxy also carry a digest of
the client's credentials, so two keys never share a session however alike their conversations
open; the credentials themselves are never kept.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from synopsis.proxy.encoding import dumps

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["CLIENT_HEADERS", "SESSION_HEADER", "opening", "session_key"]

SESSION_HEADER = "x-synopsis-session"
CLIENT_HEADERS = ("x-claude-code-session-id",)
_CREDENTIALS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
_MAX_NAME = 200
_SYSTEM_ROLES = frozenset({"system", "developer"})


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:20]


def opening(items: Sequence[Any], system: object, tools: object) -> bytes:
    """What names a conversation from its start: the leading system run (``system`` and any
    system or developer items that open ``items``), the tool names and the first user item."""
    head: list[Any] = [system]
    first_user: Any = None
    leading = True
    for item in items:
        role = item.get("role") if isinstance(item, dict) else None
        role = role if isinstance(role, str) else None  # a list or an object names no role
        if leading and role in _SYSTEM_ROLES:
            head.append(item)
            continue
        leading = False
        if role == "user":
            first_user = item
            break
    names = [_tool_name(t) for t in (tools if isinstance(tools, list) else ())]
    # Nested deeper than orjson writes, the standard library writes it (RecursionError past
    # Python's own limit: the caller refuses such a body).
    return dumps([head, names, first_user], sort_keys=True)


def _tool_name(tool: object) -> object:
    """A tool's name (Anthropic's and Responses' ``name``, chat's ``function.name``), or None
    for an entry that has none: whatever the types, it is the client's to be wrong about and
    the upstream's to refuse."""
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    nested = function.get("name") if isinstance(function, dict) else None
    return tool.get("name") or nested


def session_key(
    headers: Mapping[str, str], items: Sequence[Any], system: object, tools: object
) -> str:
    """The session a request belongs to (see the module docstring)."""
    named = headers.get(SESSION_HEADER, "").strip()
    if named:
        return named[:_MAX_NAME]
    credentials = "\n".join(headers.get(h, "") for h in _CREDENTIALS).encode()
    start = _digest(credentials, opening(items, system, tools))
    for header in CLIENT_HEADERS:
        client = headers.get(header, "").strip()
        if client:
            return f"{header.removeprefix('x-').removesuffix('-session-id')}:{client[:100]}:{start}"
    return f"auto:{start}"
