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

__all__ = ["body_items", "body_system", "wire_items"]

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
