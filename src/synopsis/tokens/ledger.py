"""An append-only running total of a history's tokens.

Agent loops recount the same growing history every turn. :meth:`TokenLedger.sync` notices
when the new history extends the one it saw last and counts only the new messages, so the cost
of a recount after an append does not grow with the history's length. Any other change
(compaction, an edit, a shorter history that is not a prefix) recounts everything through the
counter, whose per-message cache keeps that cheap for messages it has seen.

"Extends" is checked cheaply, by object identity at a few positions: the first message, the
last one seen, and a handful spread over the rest (every position when the old history is
short, and a rotating sample otherwise, so an in-place edit deep inside a long history is
found within a few syncs). Replace messages, never mutate a list in place behind the ledger's
back, or call :meth:`TokenLedger.reset` after doing so.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Final

from synopsis.errors import ConfigurationError
from synopsis.tokens.counters import TokenCounter

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.messages import Message

__all__ = ["TokenLedger"]

# Histories up to this length are compared at every position (it costs under a microsecond).
FULL_CHECK: Final[int] = 64
# Positions sampled beyond the first and the last on longer histories.
SAMPLES: Final[int] = 16


class TokenLedger:
    """A running count of ``counter.count_messages(history, tools=tools)`` for a growing
    history: ``counter.count_messages([], tools=tools)`` plus ``counter.count_message`` of each
    message. A :class:`~synopsis.tokens.Calibrated` counter's calibration is not used; call
    :meth:`calibrate` on the ledger instead. A ledger follows one conversation and is not
    meant to be shared between threads (its counter is).
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        if not isinstance(counter, TokenCounter):
            raise ConfigurationError(f"TokenLedger needs a TokenCounter, not {counter!r}")
        self.counter = counter
        self._tools = tools
        self._base: int | None = None
        self._messages: list[Message] = []
        self._counts: list[int] = []
        self._content = 0
        self._rotation = 0
        self._offset = 0
        self._anchor_length = 0
        self.recounts = 0

    def __repr__(self) -> str:
        return f"TokenLedger({self.counter!r}, messages={len(self._messages)})"

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def total(self) -> int:
        """The count at the last :meth:`sync` (the priming and tools alone before any)."""
        return self._base_tokens() + self._content + self._offset

    def reset(self) -> None:
        """Forget the history and any calibration; the next :meth:`sync` counts from scratch."""
        self._messages = []
        self._counts = []
        self._content = 0
        self._offset = 0
        self._anchor_length = 0

    def calibrate(self, reported_prompt_tokens: int, *, prefix_length: int | None = None) -> None:
        """Record the prompt tokens the provider reported for the first ``prefix_length``
        synced messages (default: all of them). While those messages stay at the front of the
        history, :attr:`total` is that number plus the estimate of the messages after them; a
        recount, or a truncation into them, drops the calibration."""
        if (
            isinstance(reported_prompt_tokens, bool)
            or not isinstance(reported_prompt_tokens, int)
            or reported_prompt_tokens < 0
        ):
            raise ConfigurationError(
                f"reported_prompt_tokens must be a non-negative int, not {reported_prompt_tokens!r}"
            )
        synced = len(self._messages)
        length = synced if prefix_length is None else prefix_length
        if isinstance(length, bool) or not isinstance(length, int) or not 0 <= length <= synced:
            raise ConfigurationError(
                f"prefix_length must be an int from 0 to {synced} (the synced messages), "
                f"not {prefix_length!r}"
            )
        estimated = self._base_tokens() + self._content - sum(self._counts[length:])
        self._offset = reported_prompt_tokens - estimated
        self._anchor_length = length

    def sync(self, messages: Sequence[Message]) -> int:
        """The token count of ``messages``; cheap when they extend the last synced history."""
        old = len(self._messages)
        new = len(messages)
        if new >= old and (not old or self._same_prefix(messages, old)):
            self._extend(messages, old)
        elif new < old and self._same_prefix(messages, new):
            self._content -= sum(self._counts[new:])
            del self._messages[new:]
            del self._counts[new:]
            if new < self._anchor_length:
                self._offset = self._anchor_length = 0
        else:
            self._recount(messages)
        return self.total

    # ------------------------------------------------------------ internals

    def _base_tokens(self) -> int:
        if self._base is None:
            self._base = self.counter.count_messages((), tools=self._tools)
        return self._base

    def _positions(self, length: int) -> tuple[int, ...]:
        """First, last, and ``SAMPLES`` evenly spread positions whose offset rotates."""
        step = length // SAMPLES
        self._rotation = (self._rotation + 1) % step
        spread = range(self._rotation, length, step)
        return (0, length - 1, *spread)

    def _same_prefix(self, messages: Sequence[Message], length: int) -> bool:
        """Whether ``messages[:length]`` look like the first ``length`` messages synced."""
        mine = self._messages
        if length <= FULL_CHECK:
            return all(map(operator.is_, mine[:length], messages))
        return all(mine[i] is messages[i] for i in self._positions(length))

    def _extend(self, messages: Sequence[Message], start: int) -> None:
        count_message = self.counter.count_message
        for i in range(start, len(messages)):
            message = messages[i]
            count = count_message(message)
            self._messages.append(message)
            self._counts.append(count)
            self._content += count

    def _recount(self, messages: Sequence[Message]) -> None:
        self.recounts += 1
        self.reset()
        self._extend(messages, 0)
