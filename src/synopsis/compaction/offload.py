"""What the store keeps of a replaced message: the caller's own item, as it was given.

Decoding is one message per wire item, plus a leading system message when Anthropic or Gemini
input has a top-level system prompt. So the item behind message ``i`` is ``items[i - lead]``;
for the ``"synopsis"`` format, the message itself as JSON (:mod:`.codec`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from synopsis.formats.native import message_to_json
from synopsis.messages import content_hash, message_text
from synopsis.stores import StoredMessage

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from synopsis.formats import FormatName
    from synopsis.messages import Message

__all__ = ["Originals", "result_id"]


def result_id(message: Message) -> str | None:
    """The store's id of a message that answers a tool call: from the call's id, the same for
    every copy of it (a digest of it, a placeholder), so that one id recalls its original
    whatever a client sends back later."""
    results = message.tool_results
    return f"r-{results[0].call_id}" if results and results[0].call_id else None


class Originals:
    """The caller's items behind the decoded messages, found by the message objects themselves
    (which stay the same objects through planning), and turned into stored messages."""

    def __init__(
        self, messages: Sequence[Message], items: Sequence[Any], format: FormatName
    ) -> None:
        self.format = format
        lead = len(messages) - len(items) if format != "synopsis" else 0
        self._index: dict[int, int] = {id(m): i for i, m in enumerate(messages)}
        self._changed: set[int] = set()
        self._adopted: list[Message] = []
        self._messages = messages
        self._items = items
        self._lead = lead

    @property
    def decoded(self) -> Sequence[Message]:
        """The caller's messages as decoded, before any repair: the positions :meth:`index`
        gives are theirs."""
        return self._messages

    def index(self, message: Message) -> int | None:
        """The position in the caller's history of ``message``, if it is one of the inputs."""
        return self._index.get(id(message))

    def adopt(self, original: Message, replacement: Message, *, changed: bool = True) -> None:
        """``replacement`` stands for ``original``'s item from now on; ``changed`` says it
        lost something (a reduced copy), so the original must be stored even while it is
        kept, rather than a piece of it (a merged turn taken apart)."""
        index = self.index(original)
        if index is not None:
            # Held for the life of the call: a copy given up and freed would leave its id to
            # the next object made, which would then pass for a caller's message.
            self._adopted.append(replacement)
            self._index[id(replacement)] = index
            if changed:
                self._changed.add(id(replacement))

    def name(self, message: Message) -> str | None:
        """The id the store gives (or gave) ``message``'s original, when a placeholder must
        name it before it is stored (``None`` for a message that is not one of the caller's,
        or an original with no id the store keeps across calls)."""
        index = self.index(message)
        if index is None:
            return None
        original = self._messages[index]
        return original.id or result_id(original)

    def changed(self, message: Message) -> bool:
        """Whether ``message`` is a reduced copy of one of the caller's messages."""
        return id(message) in self._changed

    def data(self, index: int) -> str:
        """The caller's item for message ``index`` as JSON text."""
        message = self._messages[index]
        if self.format == "synopsis" or index < self._lead:
            return message_to_json(message)
        return json.dumps(self._items[index - self._lead], ensure_ascii=False)

    def stored(
        self,
        messages: Sequence[Message],
        *,
        session_id: str,
        offset: int,
        compaction_id: str,
        at: datetime,
    ) -> list[StoredMessage]:
        """Every caller message among ``messages`` as a stored message, positions numbered
        from ``offset`` in order. What is not one of the caller's items (a summary made in
        this call) is skipped; a summary the caller sent is stored like any of its items,
        since no record of it may exist in this store."""
        out: list[StoredMessage] = []
        seen: set[int] = set()
        for message in messages:
            index = self.index(message)
            if index is None or index in seen:
                continue
            seen.add(index)
            original = self._messages[index]
            position = offset + len(out)
            sha = content_hash(original)
            out.append(
                StoredMessage(
                    session_id=session_id,
                    # The caller's own id, else one from the place in the session's offloaded
                    # history: an id from the place in this call's list would name another
                    # message in a later call, and the store would take it for a re-save.
                    id=original.id or result_id(original) or f"p{position}-{sha[:12]}",
                    position=position,
                    role=original.role.value,
                    text=message_text(original),
                    sha256=sha,
                    format=self.format,
                    data=self.data(index),
                    compaction_id=compaction_id,
                    created_at=at,
                )
            )
        return out
