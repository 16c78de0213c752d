"""An error that says a request was over the model's context window, read one way for the
proxy (an upstream refusing a client's request) and the LLM summarizer (a server refusing a
summary request).

Each server words it its own way, and says more or less: the window, the prompt's tokens as it
counted them, the answer's tokens when it counts the answer in the window. :func:`read` tells
whether an error is such a refusal and reads those figures; :meth:`Overflow.fitting` says
what window, in synopsis's own count, the refusal shows would have fitted, and only when the
figures hold together with the request synopsis counted (a server that echoes the client's
words, or names figures of some other request, teaches nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["STATUSES", "TOLERANCE", "Overflow", "read"]

STATUSES: Final = frozenset({400, 413, 422, 500})
"""The statuses a refusal as too long comes with: 400 from most servers, 413 and 422 from some
gateways and validating servers, 500 from llama-cpp-python. A 408 or a 429 ("too many tokens
per minute") is never one, nor a 502 to 504 of a gateway in trouble."""

TOLERANCE: Final = 2.0
"""How far a server's count of a request may be from synopsis's for the figures of its
refusal to be believed: tokenizers of one text differ by less than half (synopsis counts with
the model family's vocabulary, or a calibrated estimate of it); a server naming a prompt twice
as large, or half as large, as what was sent speaks of some other request."""

# The wordings of "too long" (case aside), each matched where it stands in the error. The
# ``code``/``type`` fields first, as their own JSON (or, in an SDK's text, Python) shape: a
# client's words echoed inside an error's message are escaped there, so they never read so.
_PHRASE = re.compile(
    r"""['"](?:code|type)['"]\s*:\s*['"](?:context_length_exceeded|exceed_context_size_error)"""
    r"""['"]|context_length_exceeded|exceed_context_size_error|maximum context length|"""
    r"prompt is too long|input is too long|too many tokens|context window|"
    r"exceeds? (?:the )?(?:model'?s? |available )?context|"
    r"exceeds the maximum number of tokens allowed|context length of only|"
    r"greater than the context length|cannot truncate prompt with n_keep|"
    r"is too long and exceeds limit|longer than the model's context length",
    re.IGNORECASE,
)


def _figures(*wordings: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(w, re.IGNORECASE) for w in wordings)


# The window each server names: OpenAI (and vLLM, llama-cpp-python and Mistral in its words),
# Anthropic (prompt alone, then with the answer), llama.cpp's server, llama-cpp-python, Gemini,
# LM Studio (three wordings), vLLM's scheduler, SGLang, Mistral.
_WINDOW = _figures(
    r"maximum context length is (\d+)",
    r"tokens > (\d+) maximum",
    r"exceed context limit: \d+ \+ \d+ > (\d+)",
    r"""['"]n_ctx['"]\s*:\s*(\d+)""",
    r"context window of (\d+)",
    r"maximum number of tokens allowed \((\d+)\)",
    r"context length of only (\d+)",
    r">=\s*n_ctx:?\s*\(?(\d+)",
    r"exceeds context length (\d+)",
    r"exceeds limit of (\d+)",
    r"model's context length \((\d+) tokens\)",
    r"model with (\d+) maximum context length",
)
# The prompt's tokens as the server counted them, in the same servers' words.
_PROMPT = _figures(
    r"\((\d+) in the messages",
    r"\((\d+) in your prompt",
    r"resulted in (\d+) tokens",
    r"your request has (\d+) input tokens",
    r"prompt is too long: (\d+) tokens",
    r"exceed context limit: (\d+) \+",
    r"""['"]n_prompt_tokens['"]\s*:\s*(\d+)""",
    r"requested tokens \((\d+)\)",
    r"input token count \((\d+)\)",
    r"keep the first (\d+) tokens",
    r"n_keep:?\s*\(?(\d+)",
    r"input length (\d+) exceeds",
    r"input prompt \((\d+) tokens\)",
    r"the input \((\d+) tokens\)",
    r"prompt contains (\d+) tokens",
)
# The answer's tokens, where the server counts them in the window and says so.
_ANSWER = _figures(
    r"(\d+) in the completion",
    r"(\d+) for the completion",
    r"exceed context limit: \d+ \+ (\d+) >",
    r"is too large: (\d+)\. This model's maximum context length",
)


@dataclass(frozen=True, slots=True)
class Overflow:
    """What a refusal as too long says, each figure None when it does not say it."""

    window: int | None = None
    """The context window it names."""
    prompt: int | None = None
    """The prompt's tokens, as the server counted them."""
    answer: int | None = None
    """The answer's tokens it counted in the window beside the prompt (``max_tokens``)."""

    def consistent(self, counted: int | None) -> bool:
        """Whether the figures hold together with the request synopsis counted at ``counted``
        tokens: a window is named; the request as the server counted it (the prompt, and the
        answer where it counts one) is over it; and the server's count of the prompt is
        within :data:`TOLERANCE` of synopsis's. Naming no prompt, synopsis's count times the
        tolerance must be over the window."""
        window, prompt = self.window, self.prompt
        if window is None or not counted:
            return False
        if prompt is None:
            return counted * TOLERANCE > window
        over = prompt + (self.answer or 0) > window
        return over and prompt <= counted * TOLERANCE and counted <= prompt * TOLERANCE

    def fitting(self, counted: int | None) -> int | None:
        """The window, in synopsis's count, that the refusal of a request synopsis counted at
        ``counted`` tokens shows would have fitted: the window it names, scaled by synopsis's
        count over the server's when it gives one (the tokenizers differ). None unless the
        figures are :meth:`consistent`."""
        if not self.consistent(counted) or self.window is None or counted is None:
            return None
        return self.window if self.prompt is None else self.window * counted // self.prompt


def read(status: int | None, error: str | bytes, sent: str | bytes = "") -> Overflow | None:
    """The overflow an error of ``status`` states, or None when it states none. ``sent`` is
    the request as it was sent: words of the error that were in it already are the client's
    own, echoed (an unknown field named ``context_length_exceeded``), and are not read."""
    if status not in STATUSES:
        return None
    text = error.decode("utf-8", "replace") if isinstance(error, bytes) else error
    if not _PHRASE.search(text):
        return None  # most errors: the request is not looked at
    echoed = _echoes(sent)
    if all(echoed(found.group()) for found in _PHRASE.finditer(text)):
        return None
    return Overflow(
        window=_figure(_WINDOW, text, echoed),
        prompt=_figure(_PROMPT, text, echoed),
        answer=_figure(_ANSWER, text, echoed),
    )


def _echoes(sent: str | bytes) -> Callable[[str], bool]:
    """Whether a piece of an error was in the request ``sent``, as it is or with its quotes
    all of the other kind (a server may write the client's JSON back in Python's repr). The
    request, tens of megabytes at most, is searched as it came, never decoded or copied."""

    def echoed(words: str) -> bool:
        forms = {words, words.replace("'", '"'), words.replace('"', "'")}
        if isinstance(sent, bytes):
            return any(form.encode() in sent for form in forms)
        return any(form in sent for form in forms)

    return echoed


def _figure(
    wordings: tuple[re.Pattern[str], ...], text: str, echoed: Callable[[str], bool]
) -> int | None:
    """The number the first wording found in ``text`` (not echoed) catches."""
    for wording in wordings:
        for found in wording.finditer(text):
            if not echoed(found.group()):
                return int(found.group(1))
    return None
