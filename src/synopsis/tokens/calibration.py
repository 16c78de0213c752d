"""Calibrate a counter with the prompt tokens a provider reported.

After a request, the provider's ``usage`` says exactly how many prompt tokens the history sent
so far cost. :class:`Calibrated` remembers that number for that prefix of the history: a later
history that still starts with the same messages is counted as the reported number plus an
estimate of what was appended. A history that no longer starts with the prefix (after
compaction, say) is estimated from scratch.

Matching at count time is by object identity only. ``calibrate`` may be given equal copies of
the messages (decoded again from the request, say); it resolves them with
:func:`synopsis.messages.content_hash` against the last history counted, once.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, content_hash
from synopsis.tokens.counters import TokenCounter

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Calibrated", "Calibration"]


@dataclass(frozen=True, slots=True)
class Calibration:
    """One observation: the provider counted ``reported`` tokens for the first
    ``prefix_length`` messages (with ``tools_tokens`` of tool definitions, as estimated), where
    the wrapped counter estimated ``estimated``."""

    prefix_length: int
    reported: int
    estimated: int
    tools_tokens: int

    @property
    def ratio(self) -> float:
        """``reported / estimated``: how far the offline estimate was off for this prefix."""
        return self.reported / self.estimated if self.estimated else 1.0


def _tools_tokens(counter: TokenCounter, tools: Sequence[Mapping[str, Any]] | None) -> int:
    if not tools:
        return 0
    return counter.count_messages((), tools=tools) - counter.count_messages(())


class Calibrated:
    """A :class:`~synopsis.tokens.TokenCounter` that uses the provider's reported count for a
    known prefix of the history and ``counter``'s estimate for the rest."""

    def __init__(self, counter: TokenCounter) -> None:
        if not isinstance(counter, TokenCounter):
            raise ConfigurationError(f"Calibrated needs a TokenCounter, not {counter!r}")
        self.counter = counter
        self._anchor: tuple[Message, ...] | None = None
        self._calibration: Calibration | None = None
        self._last: Sequence[Message] = ()

    def __repr__(self) -> str:
        return f"Calibrated({self.counter!r}, calibration={self._calibration!r})"

    @property
    def calibration(self) -> Calibration | None:
        return self._calibration

    def calibrate(
        self,
        prefix_messages: Sequence[Message],
        reported_prompt_tokens: int,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Calibration:
        """Record that the provider counted ``reported_prompt_tokens`` for a request made of
        ``prefix_messages`` (and ``tools``). Replaces any earlier calibration."""
        if (
            isinstance(reported_prompt_tokens, bool)
            or not isinstance(reported_prompt_tokens, int)
            or reported_prompt_tokens < 0
        ):
            raise ConfigurationError(
                f"reported_prompt_tokens must be a non-negative int, not {reported_prompt_tokens!r}"
            )
        anchor = self._resolve(tuple(prefix_messages))
        calibration = Calibration(
            prefix_length=len(anchor),
            reported=reported_prompt_tokens,
            estimated=self.counter.count_messages(anchor, tools=tools),
            tools_tokens=_tools_tokens(self.counter, tools),
        )
        self._anchor = anchor
        self._calibration = calibration
        return calibration

    def reset(self) -> None:
        """Forget the calibration; counts are estimates again."""
        self._anchor = None
        self._calibration = None

    def _resolve(self, prefix: tuple[Message, ...]) -> tuple[Message, ...]:
        """The objects of the last counted history that ``prefix`` stands for, when each
        message is the same object or has the same content hash; else ``prefix`` itself."""
        last = self._last
        if len(last) < len(prefix):
            return prefix
        resolved = tuple(last[i] for i in range(len(prefix)))
        for mine, theirs in zip(prefix, resolved, strict=True):
            if mine is not theirs and content_hash(mine) != content_hash(theirs):
                return prefix
        return resolved

    # ------------------------------------------------------------ TokenCounter

    def count_text(self, text: str) -> int:
        return self.counter.count_text(text)

    def count_message(self, message: Message) -> int:
        return self.counter.count_message(message)

    def count_messages(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        self._last = messages
        anchor, calibration = self._anchor, self._calibration
        if (
            anchor is None
            or calibration is None
            or len(messages) < len(anchor)
            or not all(map(operator.is_, anchor, messages))
        ):
            return self.counter.count_messages(messages, tools=tools)
        count_message = self.counter.count_message
        suffix = sum(count_message(messages[i]) for i in range(len(anchor), len(messages)))
        tools_delta = _tools_tokens(self.counter, tools) - calibration.tools_tokens
        return calibration.reported + tools_delta + suffix
