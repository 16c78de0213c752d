"""The caller's own items for a history a call returns: its very items where a message is
kept as it was decoded, the rest encoded in its format, and the system prompt to send apart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.formats import body_system, encode, wire_items
from synopsis.validation.rules import separate_system

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.compaction.state import Opened
    from synopsis.messages import Message

__all__ = ["output_items"]

_IN_LIST: frozenset[str] = frozenset({"openai", "responses"})
"""Formats whose system prompt sits in the list, unless the caller gives it apart."""


def output_items(
    opened: Opened, messages: Sequence[Message], *, fixed: bool = False
) -> tuple[list[Any], object]:
    """The caller's items for ``messages`` (its own where a message is kept as decoded) and
    the system prompt to send apart. ``fixed`` says the rebuild repaired something: the
    history is then not the caller's own even where it is ``opened.messages``."""
    request = opened.request
    if messages is opened.messages and not fixed and not opened.fixes and not opened.projected:
        items = wire_items(request.data, opened.format)
        return list(items), body_system(request.data, opened.format, request.system)
    apart: object = None
    if opened.format in _IN_LIST and separate_system(messages, opened.format):
        # A system prompt the caller gave apart from an OpenAI list goes back apart, as given.
        apart = body_system(request.data, opened.format, request.system)
        messages = messages[1:]
    if opened.format == "openai":
        # The caller's own item for each message kept exactly as it was decoded, so that the
        # output is byte for byte what a client sending its whole history again gets too.
        given = wire_items(request.data, opened.format)
        lead = len(opened.decoded) - len(given)
        out: list[Any] = []
        for message in messages:
            index = opened.originals.index(message)
            if index is not None and index >= lead and opened.decoded[index] is message:
                out.append(given[index - lead])
            else:
                out.extend(encode([message], opened.format).messages)
        return out, apart
    wire = encode(messages, opened.format)
    return list(wire.messages), wire.system if apart is None else apart
