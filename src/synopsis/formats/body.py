"""Where a request body keeps its history and its system prompt, per format.

A history is given as a list of items or as a whole request body: ``messages`` (OpenAI chat,
Anthropic, with Anthropic's top-level ``system``), ``input`` (Responses, where a string is
one user message) or ``contents`` (Gemini, with ``systemInstruction``). This is the one
place that knows those shapes; decoding reads a body through it, and the compaction writes
its result back through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from synopsis.formats import FormatName

__all__ = ["body_items", "body_system", "body_with", "wire_items"]

_ITEMS_KEYS: dict[str, str] = {"gemini": "contents", "responses": "input"}
_SYSTEM_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("system",),
    "gemini": ("systemInstruction", "system_instruction"),
    "responses": ("instructions",),
}


def body_items(data: object, format: FormatName) -> Any:  # noqa: ANN401 - as the caller gave it
    """The history in ``data``: ``data`` itself unless it is a request body. What is found is
    returned as it is (a decoder says what is wrong with it)."""
    if not isinstance(data, Mapping):
        return data
    if format == "gemini":
        return data.get("contents")
    if format == "responses":
        items = data.get("input")
        # The shorthand for one user message.
        return [{"role": "user", "content": items}] if isinstance(items, str) else items
    return data.get("messages")


def body_system(data: object, format: FormatName, given: object = None) -> object:
    """The system prompt a body of ``format`` carries apart from its history, else ``given``
    (the prompt a caller passed separately)."""
    if isinstance(data, Mapping):
        for key in _SYSTEM_KEYS.get(format, ()):
            given = data.get(key, given)
    return given


def wire_items(data: object, format: FormatName) -> Sequence[Any]:
    """The items of the history in ``data``, or none when it holds no list."""
    items = body_items(data, format)
    return items if isinstance(items, Sequence) and not isinstance(items, str | bytes) else ()


def body_with(
    data: Mapping[str, Any], format: FormatName, items: Sequence[Any], system: object
) -> dict[str, Any]:
    """``data`` with ``items`` as its history and, where the body kept one apart and the
    format's system prompt can change in a compaction (Anthropic's blocks, Gemini's
    instruction), ``system`` in its place; every other field as it was."""
    out = dict(data)
    out[_ITEMS_KEYS.get(format, "messages")] = list(items)
    if format != "responses":  # the Responses instructions stay as the caller sent them
        for key in _SYSTEM_KEYS.get(format, ()):
            if key in data:
                out[key] = system
    return out
