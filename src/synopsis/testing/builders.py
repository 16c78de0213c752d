"""Conversations for tests, as an agent holds them: OpenAI Chat Completions messages (dicts).

Every other format is one step away: ``synopsis.decode(items, "openai").messages`` gives
synopsis messages, and ``synopsis.encode(those, "anthropic")`` Anthropic's ``messages`` and
``system``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["assistant", "conversation", "system", "tool_call", "tool_result", "user"]


def system(text: str) -> dict[str, Any]:
    """A system message."""
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": text}


def tool_call(
    call_id: str, name: str, arguments: Mapping[str, Any] | str | None = None
) -> dict[str, Any]:
    """One tool call, for :func:`assistant`'s ``calls``: ``arguments`` as a mapping (sent as
    JSON) or as the JSON text itself."""
    if not isinstance(arguments, str):
        arguments = json.dumps(dict(arguments or {}))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(
    text: str | None = None, *, calls: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """An assistant message: its text, its tool calls (:func:`tool_call`), or both. A message
    of calls alone has ``content`` null, as the API sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [dict(call) for call in calls]
    return message


def tool_result(call_id: str, text: str) -> dict[str, Any]:
    """The result of the tool call ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def conversation(
    turns: int = 4,
    *,
    tool_calls: bool = True,
    system_prompt: str | None = "You are a coding agent.",
    result_chars: int = 400,
) -> list[dict[str, Any]]:
    """A coding agent's session, the same on every call: the system prompt, then ``turns``
    turns, each a user's request about one file and the assistant's answer. With
    ``tool_calls``, the assistant reads the file first (a ``read_file`` call, then its result
    of ``result_chars`` characters: raise it to make a history worth compacting).

    ``conversation(turns=3)`` is 1 + 3 * 4 = 13 messages; without tool calls, 1 + 3 * 2.
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
        raise ConfigurationError(f"turns must be an int >= 0, not {turns!r}")
    if isinstance(result_chars, bool) or not isinstance(result_chars, int) or result_chars < 0:
        raise ConfigurationError(f"result_chars must be an int >= 0, not {result_chars!r}")
    items = [system(system_prompt)] if system_prompt is not None else []
    for turn in range(1, turns + 1):
        path, function = f"src/module_{turn}.py", f"parse_{turn}"
        items.append(user(f"Step {turn}: what does {function} in {path} do?"))
        if tool_calls:
            call_id = f"call_{turn}"
            items.append(assistant(calls=[tool_call(call_id, "read_file", {"path": path})]))
            items.append(tool_result(call_id, _source(function, result_chars)))
        items.append(assistant(f"{function} in {path} splits a line on commas (step {turn})."))
    return items


def _source(function: str, chars: int) -> str:
    """A file's text of exactly ``chars`` characters: the function, then numbered lines."""
    lines = [f"def {function}(line):\n    return line.split(',')\n"]
    size = len(lines[0])
    while size < chars:
        lines.append(f"# line {len(lines)}: {function} keeps the fields in order\n")
        size += len(lines[-1])
    return "".join(lines)[:chars]
