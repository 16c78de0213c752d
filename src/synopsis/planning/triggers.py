"""When a history is "too big": triggers by share of the window, by tokens and by messages.

A trigger is a small immutable tree. ``Trigger.fraction(0.8) | Trigger.messages(200)`` fires
when either fires; ``&`` needs both. A fraction is resolved against the window the caller
resolved (explicit, else the model table, else the default), so one trigger serves models of
every size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from synopsis.messages import Message
    from synopsis.tokens import TokenCounter

__all__ = ["Measure", "Trigger", "measure_history"]

Kind = Literal["fraction", "tokens", "messages", "any", "all"]


@dataclass(frozen=True, slots=True)
class Measure:
    """What a trigger looks at: the tokens of the whole request (system prompt, tool
    definitions and messages), the number of messages, and the context window."""

    tokens: int
    messages: int
    window: int

    def __post_init__(self) -> None:
        for name in ("tokens", "messages", "window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}")
        if self.window == 0:
            raise ConfigurationError("window must be a positive number of tokens, got 0")

    @property
    def ratio(self) -> float:
        return self.tokens / self.window


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{what} must be a positive whole number, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Trigger:
    """Build one with :meth:`fraction`, :meth:`tokens` or :meth:`messages`, and combine with
    ``|`` (any fires) and ``&`` (all must fire)."""

    kind: Kind
    value: float = 0.0
    children: tuple[Trigger, ...] = ()

    @classmethod
    def fraction(cls, share: float) -> Trigger:
        """Fires when the request uses at least ``share`` of the window (0 < share <= 1)."""
        if (
            isinstance(share, bool)
            or not isinstance(share, int | float)
            or not 0 < share <= 1
            or math.isnan(share)
        ):
            raise ConfigurationError(
                f"a trigger fraction is a share of the window above 0 and at most 1, got {share!r}"
            )
        return cls("fraction", float(share))

    @classmethod
    def tokens(cls, count: int) -> Trigger:
        """Fires when the request holds at least ``count`` tokens."""
        return cls("tokens", _positive_int(count, "a token trigger"))

    @classmethod
    def messages(cls, count: int) -> Trigger:
        """Fires when the history holds at least ``count`` messages."""
        return cls("messages", _positive_int(count, "a message trigger"))

    def __or__(self, other: Trigger) -> Trigger:
        if not isinstance(other, Trigger):
            return NotImplemented
        return self._combine("any", other)

    def __and__(self, other: Trigger) -> Trigger:
        if not isinstance(other, Trigger):
            return NotImplemented
        return self._combine("all", other)

    def _combine(self, kind: Literal["any", "all"], other: Trigger) -> Trigger:
        left = self.children if self.kind == kind else (self,)
        right = other.children if other.kind == kind else (other,)
        return Trigger(kind, 0.0, left + right)

    def fires(self, measure: Measure) -> bool:
        if self.kind == "fraction":
            return measure.tokens >= self.value * measure.window
        if self.kind == "tokens":
            return measure.tokens >= self.value
        if self.kind == "messages":
            return measure.messages >= self.value
        if self.kind == "any":
            return any(c.fires(measure) for c in self.children)
        return all(c.fires(measure) for c in self.children)

    def token_threshold(self, window: int) -> int | None:
        """The fewest tokens at which the token side of this trigger can fire, for sizing the
        kept tail and the savings check; ``None`` for a trigger on messages alone."""
        if self.kind == "fraction":
            return math.ceil(self.value * window)
        if self.kind == "tokens":
            return int(self.value)
        if self.kind == "messages":
            return None
        found = [t for t in (c.token_threshold(window) for c in self.children) if t is not None]
        if not found:
            return None
        return min(found) if self.kind == "any" else max(found)

    def describe(self) -> str:
        if self.kind == "fraction":
            return f"{self.value:.0%} of the window"
        if self.kind == "tokens":
            return f"{int(self.value):,} tokens"
        if self.kind == "messages":
            return f"{int(self.value):,} messages"
        joiner = " or " if self.kind == "any" else " and "
        return "(" + joiner.join(c.describe() for c in self.children) + ")"

    def __str__(self) -> str:
        return self.describe()


def measure_history(
    messages: Sequence[Message],
    *,
    counter: TokenCounter,
    window: int,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reported: tuple[int, int] | None = None,
) -> Measure:
    """The :class:`Measure` of a request: every message (a system prompt sent apart is decoded
    as the leading system message, so it counts), the tool definitions and the framing.

    ``reported`` is ``(prompt_tokens, prefix_length)``: what the provider reported for the
    first ``prefix_length`` messages (with the same tools). The count then anchors on it and
    estimates only the messages after that prefix.
    """
    if reported is None:
        return Measure(counter.count_messages(messages, tools=tools), len(messages), window)
    prompt_tokens, prefix = reported
    for name, value in (("reported prompt tokens", prompt_tokens), ("prefix length", prefix)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(f"{name} must be a whole number >= 0, got {value!r}")
    if prefix > len(messages):
        raise ConfigurationError(
            f"the reported prefix has {prefix} messages but the history only {len(messages)}"
        )
    suffix = sum(counter.count_message(m) for m in messages[prefix:])
    return Measure(prompt_tokens + suffix, len(messages), window)
