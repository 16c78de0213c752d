"""A completion for :class:`~synopsis.LLMSummarizer` that answers from a script, offline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from synopsis.errors import TransportError
from synopsis.summarizers import CompletionRequest, CompletionResponse

__all__ = ["CompletionAnswer", "ScriptedCompletion"]

CompletionAnswer: TypeAlias = (
    CompletionResponse
    | str
    | Mapping[str, Any]
    | BaseException
    | Callable[[CompletionRequest], "CompletionResponse | str | Mapping[str, Any] | BaseException"]
)
"""One scripted answer: a response, given as it is; a text (the answer's whole text); a mapping
(sent as its JSON text, the shape the summarizer asks for); an exception (raised, as a failing
SDK would; an exception class works too); or a function of the request giving one of those."""


class ScriptedCompletion:
    """Answers requests with ``answers``, in order, and records every request it gets.

    Once the answers are used up, ``default`` answers every further request; without it, such
    a request raises ``TransportError("no scripted answer left", retryable=False)``, which the
    summarizer reads as a failed model (it moves on, then falls back).

    Call it (sync), or pass :meth:`acall` where an async completion is wanted; both play from
    the same script and record into the same ``requests``::

        completion = ScriptedCompletion(TransportError("503"), {"narrative": "Fixed the bug."})
        summarizer = LLMSummarizer(completion, models=["gpt-4o-mini"], sleep=lambda s: None)
        record = summarizer.summarize(messages)
        assert record.narrative == "Fixed the bug."
        assert len(completion.requests) == 2  # retried once
    """

    def __init__(self, *answers: CompletionAnswer, default: CompletionAnswer | None = None) -> None:
        self.answers: list[CompletionAnswer] = list(answers)
        """The answers still to give, in order; append to it to script more."""
        self.default = default
        self.requests: list[CompletionRequest] = []
        """Every request received, in order."""

    def __repr__(self) -> str:
        return (
            f"ScriptedCompletion({len(self.answers)} answers left, "
            f"{len(self.requests)} requests received)"
        )

    def __call__(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if self.answers:
            answer = self.answers.pop(0)
        elif self.default is not None:
            answer = self.default
        else:
            raise TransportError("no scripted answer left", retryable=False)
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, str):
            return CompletionResponse(answer)
        if isinstance(answer, Mapping):
            return CompletionResponse(json.dumps(answer))
        return answer

    async def acall(self, request: CompletionRequest) -> CompletionResponse:
        """The same as calling it, as a coroutine that yields to the event loop once first."""
        await asyncio.sleep(0)
        return self(request)
