"""The part of a caller's own history that a session's newest summary stands for.

A client that sends its whole history on every request (any HTTP client, a framework's
per-request hook) sends again what an earlier call summarized. After each compaction the
session remembers where that part lies in the caller's history (its first position and its
length, counted as the caller's messages decode) and a digest of its messages. A later history
with the same messages there gets the summary it already has in their place before anything
is measured: it is measured, decided and sent as the history of a client that keeps
``result.messages`` would be, the same summary byte for byte, so the provider's prompt cache
hits and nothing is summarized twice.

A history that differs inside that part (a message edited, dropped or inserted) cannot take
the summary: the session's chain is invalidated, with a :class:`~synopsis.events.ChainInvalidated`
event saying why, and the history is compacted afresh. The originals already offloaded stay in
the store.

The kept messages a compaction made smaller (an argument truncated, an oversized result or
request digested) are remembered too, by position and content hash, with what they became:
a client sending the original again gets the smaller copy, as a client keeping the output
has it, and the history is measured the same.

Only a history that needed no repair takes part, both when a projection is recorded and when
one is used: positions are those of the messages as decoded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.formats import FORMATS, decode, encode
from synopsis.messages import Message, Role, TextPart, content_hash, is_summary

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.compaction.offload import Originals
    from synopsis.formats import FormatName

__all__ = ["Projection", "digest", "recorded"]


def digest(messages: Sequence[Message]) -> str:
    """One hash over the content hashes of ``messages``, in order."""
    h = hashlib.sha256()
    for message in messages:
        h.update(content_hash(message).encode())
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Projection:
    """The caller's messages ``start`` to ``start + count`` (as decoded), whose digest is
    ``digest``, stand for the summary message of ``role`` and ``text`` (none when ``count``
    is 0: a compaction that only cleared old outputs); ``smaller`` holds, for
    each kept message a compaction made smaller, its position, its original's content hash and
    the smaller copy as a ``format`` item (JSON)."""

    start: int
    count: int
    digest: str
    role: str
    text: str
    format: str = "openai"
    smaller: tuple[tuple[int, str, str], ...] = ()

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Projection | None:
        """The projection a session state holds, if any (``None`` for an empty or foreign
        mapping: a state written before projections existed)."""
        try:
            found = cls(
                start=int(data["start"]),
                count=int(data["count"]),
                digest=str(data["digest"]),
                role=str(data["role"]),
                text=str(data["text"]),
                format=str(data.get("format", "openai")),
                smaller=tuple(
                    (int(i), str(h), str(item)) for i, h, item in data.get("smaller", ())
                ),
            )
            Role(found.role)
        except (KeyError, TypeError, ValueError):
            return None
        if found.count == 0:
            # No summary: the outputs a clearing made smaller, alone.
            return found if found.start == 0 and found.smaller else None
        return found if found.start >= 0 and found.count > 0 else None

    def to_json(self) -> dict[str, object]:
        return {
            "start": self.start,
            "count": self.count,
            "digest": self.digest,
            "role": self.role,
            "text": self.text,
            "format": self.format,
            "smaller": [list(entry) for entry in self.smaller],
        }

    @property
    def summary(self) -> Message:
        return Message(Role(self.role), (TextPart(self.text),))

    def apply(
        self, messages: Sequence[Message], format: str
    ) -> tuple[tuple[Message, ...], list[tuple[Message, Message]]] | str:
        """``messages`` (of ``format``) with the part this projection covers replaced by its
        summary, and the kept messages a compaction made smaller by their smaller copies (the
        pairs of original and copy come second); or why they cannot be: the sentence an event
        reports."""
        end = self.start + self.count
        if len(messages) < end:
            return (
                f"the history has {len(messages)} messages, fewer than the {end} the session's "
                "summary was made from"
            )
        if digest(messages[self.start : end]) != self.digest:
            return (
                f"messages {self.start} to {end - 1}, which the session's summary stands for, "
                "are not the ones it was made from (one was edited, dropped or inserted)"
            )
        out = list(messages)
        swapped: list[tuple[Message, Message]] = []
        if format == self.format:
            for index, original, item in self.smaller:
                if index < len(out) and content_hash(out[index]) == original:
                    swapped.append((out[index], _decoded(item, format)))
                    out[index] = swapped[-1][1]
        if not self.count:
            return tuple(out), swapped
        return (*out[: self.start], self.summary, *out[end:]), swapped


def _decoded(item: str, format: str) -> Message:
    fmt: FormatName = next(f for f in FORMATS if f == format)
    (message,) = decode([json.loads(item)], fmt).messages
    return message


def _smaller(
    kept: Sequence[Message], originals: Originals, decoded: Sequence[Message], format: FormatName
) -> tuple[tuple[int, str, str], ...]:
    """The kept messages a compaction made smaller, each as (position, original's content
    hash, the smaller copy as one item), where one item stands for it alone."""
    out: list[tuple[int, str, str]] = []
    if format == "synopsis":
        return ()  # its items are messages already, and no JSON
    for message in kept:
        index = originals.index(message)
        if index is None or not originals.changed(message):
            continue
        items = encode([message], format).messages
        if len(items) != 1:
            continue
        item = json.dumps(items[0], ensure_ascii=False, sort_keys=True)
        out.append((index, content_hash(decoded[index]), item))
    return tuple(out)


def _cleared(
    final: Sequence[Message],
    decoded: Sequence[Message],
    originals: Originals,
    format: FormatName,
) -> Projection | None:
    """The projection of a compaction that summarized nothing (the clearing tier alone): every
    caller message kept in its place, some made smaller."""
    if [originals.index(m) for m in final] != list(range(len(decoded))):
        return None
    smaller = _smaller(final, originals, decoded, format)
    if not smaller:
        return None
    return Projection(0, 0, digest(()), Role.USER.value, "", format, smaller)


def recorded(
    final: Sequence[Message],
    decoded: Sequence[Message],
    originals: Originals,
    format: FormatName,
) -> Projection | None:
    """The projection a compaction's output ``final`` leaves for the caller's ``decoded``
    messages: the one summary in it stands for the caller's messages it no longer holds,
    when they are one run between the messages kept before it and those kept after it, in
    their order. ``None`` otherwise (nothing is then projected)."""
    places = [i for i, m in enumerate(final) if is_summary(m)]
    if not places:
        return _cleared(final, decoded, originals, format)
    if len(places) != 1:
        return None
    (at,) = places
    summary = final[at]
    if len(summary.parts) != 1 or not isinstance(summary.parts[0], TextPart):
        return None
    head = [originals.index(m) for m in final[:at]]
    tail = [originals.index(m) for m in final[at + 1 :]]
    start = len(head)
    end = len(decoded) - len(tail)
    if head != list(range(start)) or tail != list(range(end, len(decoded))) or end <= start:
        return None
    return Projection(
        start=start,
        count=end - start,
        digest=digest(decoded[start:end]),
        role=summary.role.value,
        text=summary.parts[0].text,
        format=format,
        smaller=_smaller([*final[:at], *final[at + 1 :]], originals, decoded, format),
    )
