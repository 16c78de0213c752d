"""What a summary record covers: one id and one content hash per summarized message.

A record of a long conversation covers thousands of messages, and a session keeps its whole
chain. As one pydantic object per message, that was about 400 bytes and two objects for the
garbage collector to walk, per message and per record: at 10k messages one compaction made
and held 13k of them, enough to set off a full collection on most calls. :class:`Covers`
keeps the ids and the hashes as two tuples of text, which the collector does not track, and
gives out :class:`Coverage` items when asked. It reads as a sequence of them, compares equal
to a tuple of them, and validates and serializes as the list of ``{"id", "sha256"}`` objects
it always was: the JSON schema and what a store holds are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, final, overload

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import core_schema

from synopsis.messages import Message, content_hash, message_id

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler

__all__ = ["Coverage", "Covers", "covers_of"]


class Coverage(BaseModel):
    """One summarized message: its id and the sha256 of its content (``content_hash``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


@final
class Covers(Sequence[Coverage]):
    """The messages a record covers, in order: a read-only sequence of :class:`Coverage`.

    Build it with :meth:`of` from the messages a summarizer was given (what a custom
    summarizer should do), or from :class:`Coverage` items or ``{"id", "sha256"}`` mappings,
    which are validated. :attr:`ids` and :attr:`hashes` give the two columns without making
    an object per message.
    """

    __slots__ = ("_hashes", "_ids")

    _ids: tuple[str, ...]
    _hashes: tuple[str, ...]

    def __init__(self, items: Iterable[Coverage | Mapping[str, Any]] = ()) -> None:
        if isinstance(items, str | bytes | Mapping):
            raise TypeError(f"Covers takes Coverage items, not {type(items).__name__}")
        found = [c if isinstance(c, Coverage) else Coverage.model_validate(c) for c in items]
        self._ids = tuple(c.id for c in found)
        self._hashes = tuple(c.sha256 for c in found)

    @classmethod
    def of(cls, messages: Sequence[Message], start: int = 0) -> Covers:
        """The coverage of ``messages``, the first of them being message ``start`` of the
        history (the position names a message that has no id of its own)."""
        return _made(
            tuple(message_id(m, start + i) for i, m in enumerate(messages)),
            tuple(map(content_hash, messages)),
        )

    @classmethod
    def join(cls, parts: Iterable[Sequence[Coverage]]) -> Covers:
        """The coverage of consecutive parts, in order, as one."""
        found = [covers_of(part) for part in parts]
        return _made(
            tuple(i for part in found for i in part._ids),
            tuple(h for part in found for h in part._hashes),
        )

    @property
    def ids(self) -> tuple[str, ...]:
        """Each covered message's id, in order."""
        return self._ids

    @property
    def hashes(self) -> tuple[str, ...]:
        """Each covered message's ``content_hash``, in order."""
        return self._hashes

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> Coverage: ...
    @overload
    def __getitem__(self, index: slice) -> Covers: ...
    def __getitem__(self, index: int | slice) -> Coverage | Covers:
        if isinstance(index, slice):
            return _made(self._ids[index], self._hashes[index])
        # Made from values that were checked when they came in: no second validation.
        return Coverage.model_construct(id=self._ids[index], sha256=self._hashes[index])

    def __iter__(self) -> Iterator[Coverage]:
        for i, h in zip(self._ids, self._hashes, strict=True):
            yield Coverage.model_construct(id=i, sha256=h)

    def __add__(self, other: object) -> Covers:
        if not isinstance(other, Covers):
            return NotImplemented
        return _made(self._ids + other._ids, self._hashes + other._hashes)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Covers):
            return self._hashes == other._hashes and self._ids == other._ids
        if isinstance(other, tuple):
            return len(other) == len(self) and all(
                isinstance(c, Coverage) and c.id == i and c.sha256 == h
                for c, i, h in zip(other, self._ids, self._hashes, strict=True)
            )
        return NotImplemented

    def __hash__(self) -> int:
        # Equal to the tuple of Coverage it stands for, so hashed as that tuple is.
        return hash(tuple(self))

    def __repr__(self) -> str:
        if not self._ids:
            return "Covers()"
        return f"Covers({len(self)} messages, {self._ids[0]!r} to {self._ids[-1]!r})"

    def __reduce__(self) -> tuple[Any, tuple[tuple[str, ...], tuple[str, ...]]]:
        return _made, (self._ids, self._hashes)

    def __copy__(self) -> Covers:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Covers:
        return self

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: object, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Anything but a Covers is validated as the tuple of Coverage it stands for, which
        # also gives the JSON schema and the error locations; the dump is that tuple's.
        return core_schema.no_info_wrap_validator_function(
            _validated,
            handler.generate_schema(tuple[Coverage, ...]),
            serialization=core_schema.plain_serializer_function_ser_schema(_dumped, info_arg=True),
        )


def _made(ids: tuple[str, ...], hashes: tuple[str, ...]) -> Covers:
    made = object.__new__(Covers)
    made._ids = ids
    made._hashes = hashes
    return made


def covers_of(value: Sequence[Coverage]) -> Covers:
    """``value`` as a :class:`Covers`: a record copied or built without validation
    (``model_copy(update=...)``, ``model_construct``) may hold a plain tuple of Coverage."""
    return value if isinstance(value, Covers) else Covers(value)


def _validated(value: object, handler: core_schema.ValidatorFunctionWrapHandler) -> Covers:
    if isinstance(value, Covers):
        return value
    return Covers(handler(value))


def _dumped(
    covers: Sequence[Coverage], info: core_schema.SerializationInfo
) -> list[dict[str, str]] | tuple[dict[str, str], ...]:
    found = covers_of(covers)
    items = [{"id": i, "sha256": h} for i, h in zip(found.ids, found.hashes, strict=True)]
    return items if info.mode_is_json() else tuple(items)
