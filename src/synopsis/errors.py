"""Exceptions raised by synopsis.

Every error subclasses a builtin so callers can catch what they already know::

    SynopsisError (Exception)
    ├── ConversationError (ValueError)      input no provider would accept, or not a history
    │   └── UnknownFormatError              detect() could not name the format
    ├── ConfigurationError (ValueError)     an option out of range or of the wrong type
    ├── VocabularyError (RuntimeError)      a bundled tokenizer file is missing or corrupt
    ├── TransportError (ConnectionError)    a summarizer's model could not be reached
    ├── SummarizerError (RuntimeError)      every model failed and falling back was refused
    ├── StoreError (RuntimeError)           a store could not read or write (nothing half-written)
    └── BudgetUnreachableError (RuntimeError)  no compaction makes the history fit its window
"""

from __future__ import annotations

import re

__all__ = [
    "BudgetUnreachableError",
    "ConfigurationError",
    "ConversationError",
    "StoreError",
    "SummarizerError",
    "SynopsisError",
    "TransportError",
    "UnknownFormatError",
    "UnknownModelWarning",
    "VocabularyError",
]


ERROR_CHARS = 300
"""How much of a failure's text an event or a log line repeats. A server's error body can be
tens of kilobytes (one validation error per field of the request); the exception that carries
it whole stays chained as ``__cause__``."""


def brief(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out; a text it cut
    already is left as it is."""
    if len(text) <= limit or (len(text) <= limit + _SAID and _CUT.search(text)):
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


_CUT = re.compile(r"… \([\d,]+ more characters\)$")
_SAID = 40
"""Room for :func:`brief`'s own note of what it left out."""


class SynopsisError(Exception):
    """Base of every error synopsis raises on purpose."""


class ConversationError(SynopsisError, ValueError):
    """A history that is malformed or that a provider would reject.

    ``index`` is the position of the offending message (``None`` when the whole input is at
    fault) and ``rule`` a stable identifier such as ``"message.role"`` or ``"openai.C1"``.
    """

    def __init__(self, message: str, *, index: int | None = None, rule: str = "input") -> None:
        self.index = index
        self.rule = rule
        self.detail = message
        where = f"message {index}: " if index is not None else ""
        super().__init__(f"{where}{message} [{rule}]")


class UnknownFormatError(ConversationError):
    """The input's wire format could not be recognised."""


class ConfigurationError(SynopsisError, ValueError):
    """An option is out of range, of the wrong type, or inconsistent with another."""


class VocabularyError(SynopsisError, RuntimeError):
    """A bundled tokenizer vocabulary is missing, or its sha256 does not match."""


class TransportError(SynopsisError, ConnectionError):
    """The completion could not be obtained; ``retryable`` says whether asking again may help.

    When the server said the request was over its context window, ``context_window`` is that
    window, ``prompt_tokens`` (when it said so) how many tokens of its own the request's
    messages took and ``answer_tokens`` how many it counted for the answer beside them: a
    smaller request may then pass where the same one never will."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = True,
        context_window: int | None = None,
        prompt_tokens: int | None = None,
        answer_tokens: int | None = None,
    ) -> None:
        self.retryable = retryable
        self.context_window = context_window
        self.prompt_tokens = prompt_tokens
        self.answer_tokens = answer_tokens
        super().__init__(message)


class SummarizerError(SynopsisError, RuntimeError):
    """Every model failed and the summarizer was told not to fall back (``abort_on_failure``)."""


class StoreError(SynopsisError, RuntimeError):
    """A store could not be opened, read or written; a failed save leaves nothing behind."""


class BudgetUnreachableError(SynopsisError, RuntimeError):
    """Even after every pass, a smaller tail and trimming, the history does not fit the window
    less the tokens reserved for the answer. The input is untouched and nothing was saved.

    ``tokens`` is the history's size, ``limit`` what the ``window`` leaves after ``reserve``
    tokens for the answer, and ``protected`` what no compaction can make smaller (the system
    prompt, the tool definitions), when that alone is too large (else ``None``)."""

    def __init__(
        self,
        message: str,
        *,
        tokens: int | None = None,
        limit: int | None = None,
        window: int | None = None,
        reserve: int | None = None,
        protected: int | None = None,
    ) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.limit = limit
        self.window = window
        self.reserve = reserve
        self.protected = protected


class UnknownModelWarning(UserWarning):
    """A model the bundled table does not know: synopsis assumed its context window (200,000
    tokens) where it may be far smaller. Give the window (``context_window=``) to end it;
    ``warnings.filterwarnings("ignore", category=UnknownModelWarning)`` silences it."""
