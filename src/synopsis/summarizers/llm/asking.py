"""How a completion asks a provider's SDK: one call per request, its failures as
:class:`~synopsis.errors.TransportError`, and the same request asked again in a lesser
dialect when the server refused it for a reason one avoids (see :mod:`.dialects`)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from synopsis.errors import TransportError, brief
from synopsis.overflows import read
from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.dialects import Dialect, Dialects, refusal

__all__ = [
    "DIALECTS",
    "AsyncCompletion",
    "Endpoint",
    "Failures",
    "SyncCompletion",
    "completion",
    "http_errors",
    "missing",
    "sent_text",
    "transport_error",
    "unfinished",
]

logger = logging.getLogger("synopsis.summarizers")

DIALECTS = Dialects()
"""What each server and model was found to accept (see :mod:`.dialects`), for this process."""

SyncCompletion = Callable[[CompletionRequest], CompletionResponse]
AsyncCompletion = Callable[[CompletionRequest], Awaitable[CompletionResponse]]
Arguments = Callable[[CompletionRequest, Dialect], dict[str, Any]]
Convert = Callable[[Any, CompletionRequest], CompletionResponse]
Failures = tuple[type[Exception], ...]


def missing(package: str) -> ImportError:
    return ImportError(
        f"this completion needs the {package} SDK, which is not installed: "
        f'pip install "synopsis[{package}]"'
    )


def http_errors() -> Failures:
    """The HTTP library's request errors (a connection cut mid-stream, a read timeout), which
    an SDK may let through while it reads a stream: httpx2's, or httpx's for older SDKs. Only
    a library the SDK has loaded is looked at."""
    loaded = (sys.modules.get(name) for name in ("httpx2", "httpx"))
    return tuple(module.RequestError for module in loaded if module is not None)


def transport_error(provider: str, error: Exception, sent: str = "") -> TransportError:
    """A timeout, a lost connection (no status), a 408, a 429 or a 5xx is worth another try;
    so is an error event inside a stream that had started (the status of that stream is below
    400). A request refused as invalid is not: any other 4xx, and a 5xx whose body is a
    validation error (see :func:`~.dialects.refusal`). A refusal as too long carries the
    figures it names (``sent``, the request, tells the server's words from echoed ones)."""
    status: int | None = getattr(error, "status_code", None)
    refused = refusal(status, str(error), sent)
    found = read(status, str(error), sent) if refused == "overflow" else None
    where = f" (HTTP {status})" if status is not None else ""
    return TransportError(
        f"{provider}: {type(error).__name__}{where}: {brief(str(error))}",
        retryable=refused is None,
        context_window=found.window if found else None,
        prompt_tokens=found.prompt if found else None,
        answer_tokens=found.answer if found else None,
    )


def sent_text(arguments: Mapping[str, Any]) -> str:
    """A request's arguments as the text a server's error may echo parts of (its JSON)."""
    return json.dumps(arguments, ensure_ascii=False, default=str)


def unfinished(provider: str, last: str) -> TransportError:
    return TransportError(f"{provider}: the stream ended before {last}", retryable=True)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How one provider endpoint is asked and read: ``convert`` reads a whole answer, ``fold``
    the list of events of a streamed one (asked with ``stream_arguments`` added)."""

    provider: str
    path: str
    """The endpoint's path, under which what a server accepts is remembered."""
    structured: bool
    """Whether the endpoint sends a response format (Anthropic's does not)."""
    arguments: Arguments
    convert: Convert
    fold: Convert
    stream_arguments: Mapping[str, Any] = field(default_factory=dict)

    def plan(self, stream: bool) -> tuple[Arguments, Convert]:
        if not stream:
            return self.arguments, self.convert

        def arguments(request: CompletionRequest, dialect: Dialect) -> dict[str, Any]:
            return {**self.arguments(request, dialect), "stream": True, **self.stream_arguments}

        return arguments, self.fold


@dataclass(frozen=True, slots=True)
class _Asking:
    """One completion's way of asking: its endpoint, the server it asks, where it starts."""

    endpoint: Endpoint
    server: str
    start: Dialect

    def first(self, request: CompletionRequest) -> Dialect:
        known = DIALECTS.get((self.endpoint.path, self.server, request.model), self.start)
        # Told to be strict, a completion is, whatever another one learned of the server.
        return replace(known, strict=known.strict or self.start.strict)

    def after(
        self, dialect: Dialect, error: Exception, request: CompletionRequest, sent: str
    ) -> Dialect | None:
        """The dialect to ask again in when the server refused ``dialect`` (asked as
        ``sent``) for a reason a lesser one avoids; else None."""
        refused = refusal(getattr(error, "status_code", None), str(error), sent)
        if refused == "structure" and (request.json_schema is None or dialect.structure == "plain"):
            refused = "messages"  # no response format was sent: the refusal is of the rest
        lower = dialect.after(refused) if refused in ("structure", "messages") else None
        if lower is not None:
            logger.info(
                "summarizer %s at %s refused the request (%s); asking again with %s",
                request.model,
                self.server,
                refused,
                lower,
            )
        return lower

    def worked(self, request: CompletionRequest, dialect: Dialect) -> None:
        if dialect != self.first(request):
            DIALECTS.learn((self.endpoint.path, self.server, request.model), dialect)


def _sync(
    asking: _Asking, create: Callable[..., Any], failures: Failures, stream: bool
) -> SyncCompletion:
    """One SDK call per request (its events read to the end when streamed), its failures as
    TransportError, its answer converted; asked again in a lesser dialect when refused."""
    arguments, convert = asking.endpoint.plan(stream)

    def complete(request: CompletionRequest) -> CompletionResponse:
        dialect = asking.first(request)
        while True:
            asked = arguments(request, dialect)
            try:
                answer = create(**asked)
                if stream:
                    answer = list(answer)
            except failures as error:
                sent = sent_text(asked)
                lower = asking.after(dialect, error, request, sent)
                if lower is None:
                    raise transport_error(asking.endpoint.provider, error, sent) from error
                dialect = lower
                continue
            asking.worked(request, dialect)
            return convert(answer, request)

    return complete


def _async(
    asking: _Asking, create: Callable[..., Awaitable[Any]], failures: Failures, stream: bool
) -> AsyncCompletion:
    """:func:`_sync` for an async SDK client."""
    arguments, convert = asking.endpoint.plan(stream)

    async def acomplete(request: CompletionRequest) -> CompletionResponse:
        dialect = asking.first(request)
        while True:
            asked = arguments(request, dialect)
            try:
                answer = await create(**asked)
                if stream:
                    answer = [event async for event in answer]
            except failures as error:
                sent = sent_text(asked)
                lower = asking.after(dialect, error, request, sent)
                if lower is None:
                    raise transport_error(asking.endpoint.provider, error, sent) from error
                dialect = lower
                continue
            asking.worked(request, dialect)
            return convert(answer, request)

    return acomplete


def completion(
    endpoint: Endpoint,
    client: Any,  # noqa: ANN401 - any of the four SDK clients
    create: Callable[..., Any],
    failures: Failures,
    *,
    is_async: bool,
    stream: bool,
    strict: bool,
) -> SyncCompletion | AsyncCompletion:
    # An endpoint that sends no response format has none to step down from.
    start = Dialect("json_schema" if endpoint.structured else "plain", strict=strict)
    asking = _Asking(endpoint, str(getattr(client, "base_url", "")), start)
    if is_async:
        return _async(asking, create, failures, stream)
    return _sync(asking, create, failures, stream)
