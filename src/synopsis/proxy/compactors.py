"""One :class:`~synopsis.Compactor` per model the clients ask for, sharing one store.

A request is compacted for the model it names: its window decides when and how far. The
compactors share the store (so a session's summaries and originals are in one place whatever
the model) and keep one fast-path memo per session each. Two things refine a model's window
as the proxy runs: an upstream that refuses a request as too long and names its window, and
the prompt tokens an upstream reports, when they show that synopsis counts this model's
tokens low.

A window learnt from a refusal is the upstream's: it is kept per model and upstream, so one
server's small window never shrinks another's, and a model with a compactor for the window
it learnt at one upstream keeps its usual one at the others. It is never below
:data:`LEARNT_FLOOR`, never replaces a window given for the model, and is forgotten when a
later answer shows that more fits.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from synopsis.compaction import Compactor
from synopsis.models import DEFAULT_CONTEXT_WINDOW, lookup
from synopsis.summarizers import AsyncSummarizer, Summarizer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from os import PathLike

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

__all__ = ["LEARNT_FLOOR", "Compactors", "Timed"]

LEARNT_FLOOR = 1_024
"""The smallest window a refusal teaches, in synopsis's tokens. The smallest windows local
servers run with are 2,048 tokens (llama-cpp-python's default ``n_ctx``, Ollama's former
default ``num_ctx``); a refusal is believed only when the server's count of the request is
within :data:`~synopsis.overflows.TOLERANCE` (twice) of synopsis's, so such a window is never
less than 1,024 of synopsis's tokens, and can be learnt. Below it, a refusal's figures are not
a window a conversation can be held to."""

_CALIBRATE_ABOVE = 1.05
"""Reported over estimated prompt tokens past which a model's window is scaled down: below
it the counting error is smaller than the room the trigger leaves."""
_SMOOTHING = 0.3
_MAX_SCALE = 1.5
"""The most a report scales a window down: tokenizers of one model family's neighbours differ
by less; a larger gap means the report counts something else (cached tools, images)."""
_MIN_ESTIMATE = 1000
_UNKNOWN_REMEMBERED = 4096
"""Unknown model names said once each; past this many the memory starts again."""
"""Smaller requests are not compared: the provider's fixed overhead per request swamps them."""


@dataclass(frozen=True, slots=True)
class _Learnt:
    """A window learnt from an upstream's refusal: in synopsis's tokens, and the window the
    refusal named, in the upstream's."""

    window: int
    limit: int


class Timed:
    """A summarizer that tells ``observe`` how each call went (its name, seconds, success)."""

    def __init__(
        self,
        inner: Summarizer | AsyncSummarizer,
        name: str,
        observe: Callable[[str, float, bool], None],
    ) -> None:
        self.inner = inner
        self.name = name
        self.observe = observe

    @contextlib.contextmanager
    def _timing(self) -> Iterator[None]:
        """Reports the call made inside it: its seconds, and whether it returned."""
        start = time.perf_counter()
        ok = False
        try:
            yield
            ok = True
        finally:
            self.observe(self.name, time.perf_counter() - start, ok)

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        inner = self.inner
        if not isinstance(inner, Summarizer):  # the drivers call asummarize() for these
            raise TypeError(f"{type(inner).__name__} has no blocking summarize()")
        with self._timing():
            return inner.summarize(
                messages, previous=previous, instructions=instructions, max_tokens=max_tokens
            )

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        inner = self.inner
        options: dict[str, Any] = {
            "previous": previous,
            "instructions": instructions,
            "max_tokens": max_tokens,
        }
        with self._timing():
            if isinstance(inner, AsyncSummarizer):
                return await inner.asummarize(messages, **options)
            return await asyncio.to_thread(inner.summarize, messages, **options)


class Compactors:
    """The compactor of each model, made on first use (see the module docstring).

    ``options`` are :class:`~synopsis.config.Settings` options by keyword (``config`` and
    ``environ`` as for ``Compactor``); ``windows`` gives some models a window of their own;
    ``store`` defaults to ``"memory"``, since sessions need one.
    """

    def __init__(
        self,
        *,
        config: str | PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        windows: Mapping[str, int] | None = None,
        remembered_sessions: int = 256,
        max_compactors: int = 64,
        observe_summarizer: Callable[[str, float, bool], None] | None = None,
        unknown_model: Callable[[str], None] | None = None,
        **options: Any,  # noqa: ANN401 - Settings validates each option
    ) -> None:
        self._config = config
        self._environ = environ
        self._options = dict(options)
        self._windows = dict(windows or {})
        self._remembered = remembered_sessions
        self._unknown_model = unknown_model
        self._unknown: set[str] = set()
        self._max_compactors = max_compactors
        self._observe = observe_summarizer
        # The root only opens the store and reads the settings: it names no model, so it
        # uses the rules (an LLM summarizer asks, unless told otherwise, each request's model).
        rooted = {**self._options, "summarizer": "rules"}
        root = Compactor(config=config, environ=environ, **rooted)
        if root.setup.store is None:
            root.close()
            root = Compactor(config=config, environ=environ, **{**rooted, "store": "memory"})
        self._root = root
        self.store = root.setup.store
        self.settings = root.settings
        self._by_model: dict[tuple[str, str], Compactor] = {}
        self._variants: dict[str, Compactor] = {}
        """Per model, and upstream for a window learnt there ("" for the usual one)."""
        self._scale: dict[str, float] = {}
        self._learned: dict[tuple[str, str], _Learnt] = {}
        self._applied: dict[str, float] = {}
        self._lock = threading.Lock()
        # A summarizer that cannot be built (an LLM's missing key or SDK) is said now, once,
        # rather than at every request's compaction.
        probe = next(iter(self.settings.summarizer_models), None) or "gpt-4o"
        self._make(probe, None).close()

    def for_model(self, model: str, upstream: str = "") -> Compactor:
        """The compactor for requests to ``model`` at ``upstream``. Those of the
        ``max_compactors`` models asked for last are kept (clients may name models without
        end); one dropped is not closed, since a request may still be using it: it shares the
        store, and its fast-path memo goes with it."""
        key = (model, upstream) if (model, upstream) in self._learned else (model, "")
        with self._lock:
            found = self._by_model.pop(key, None) or self._make(model, self._learned.get(key))
            self._by_model[key] = found  # the most recently used last
            while len(self._by_model) > self._max_compactors:
                oldest = next(iter(self._by_model))
                del self._by_model[oldest]
                # Made again if asked for again (a harmless rebuild at worst).
                self._applied.pop(oldest[0], None)
        return found

    def variant(self, model: str, **overrides: Any) -> Compactor:  # noqa: ANN401 - Settings options
        """A compactor for ``model`` with ``overrides`` over the proxy's options (a request's
        own clearing or compaction settings), sharing the store; made once per model and
        overrides, the ``max_compactors`` used last kept."""
        key = repr((model, sorted(overrides.items())))
        with self._lock:
            found = self._variants.pop(key, None)
            if found is None:
                options = {k: v for k, v in self._options.items() if k != "store"}
                found = Compactor(
                    config=self._config,
                    environ=self._environ,
                    store=self.store,
                    **{**options, "model": model, **overrides},
                )
                found.remembered_sessions = self._remembered
                self._timed(found)
            self._variants[key] = found
            while len(self._variants) > self._max_compactors:
                del self._variants[next(iter(self._variants))]
        return found

    def _timed(self, compactor: Compactor) -> None:
        if self._observe is not None:
            setup = compactor.setup
            timed = Timed(setup.summarizer, setup.summarizer_name, self._observe)
            compactor.setup = replace(setup, summarizer=timed)

    def _make(self, model: str, learned: _Learnt | None) -> Compactor:
        # The root opened the store (or was given it): every model's compactor shares it.
        options = {k: v for k, v in self._options.items() if k != "store"}
        options["model"] = model
        window = learned.window if learned else self._windows.get(model)
        if window is None and self.settings.context_window is None and lookup(model) is None:
            # Said here, once per model, on the proxy's log and metrics; not as a Python
            # warning from deep in a request.
            window = DEFAULT_CONTEXT_WINDOW
            self._first_sight(model)
        if window is not None:
            options["context_window"] = window
        compactor = Compactor(
            config=self._config, environ=self._environ, store=self.store, **options
        )
        # A window learnt from a refusal is in synopsis's own count already.
        if learned is None:
            scale = self._applied[model] = self._target(model)
            if scale > 1.0:
                shrunk = max(1, math.floor(compactor.setup.window / scale))
                compactor.close()
                options["context_window"] = shrunk
                compactor = Compactor(
                    config=self._config, environ=self._environ, store=self.store, **options
                )
        compactor.remembered_sessions = self._remembered
        self._timed(compactor)
        return compactor

    def _first_sight(self, model: str) -> None:
        if model in self._unknown:
            return
        if len(self._unknown) >= _UNKNOWN_REMEMBERED:  # clients may name models without end
            self._unknown.clear()
        self._unknown.add(model)
        if self._unknown_model is not None:
            self._unknown_model(model)

    def window(self, model: str, upstream: str = "") -> int:
        return self.for_model(model, upstream).setup.window

    def learn_window(
        self, model: str, window: int, *, upstream: str = "", limit: int | None = None
    ) -> bool:
        """``upstream`` refused a request to ``model`` as too long, naming its window
        (``limit``, in its own count), and ``window`` tokens (as synopsis counts them) is what
        would have fitted: compact for that at this upstream from now on, when it is smaller
        than the window used so far there (and at least :data:`LEARNT_FLOOR`). A window given
        for the model is never replaced. Whether the window changed."""
        if model in self._windows:
            return False
        learnt = max(window, LEARNT_FLOOR)
        if learnt >= self.window(model, upstream):
            return False
        with self._lock:
            self._learned[model, upstream] = _Learnt(learnt, limit or learnt)
            self._by_model.pop((model, upstream), None)
        return True

    def calibrate(
        self, model: str, reported: int, estimated: int | None, *, upstream: str = ""
    ) -> bool:
        """``upstream`` answered a request to ``model`` and counted ``reported`` prompt
        tokens, where synopsis counted ``estimated`` (None when synopsis did not count what
        was sent). A window learnt there that the answer shows to be wrong (the upstream took
        more than the window its refusal named, or more of synopsis's tokens than it learnt)
        is forgotten; otherwise, when synopsis counts this model low, its usual window is
        scaled down by the (smoothed) ratio, so that what synopsis thinks fits does. Whether
        a learnt window was forgotten."""
        learned = self._learned.get((model, upstream))
        if learned is not None and (
            reported > learned.limit or (estimated is not None and estimated > learned.window)
        ):
            with self._lock:
                self._learned.pop((model, upstream), None)
                self._by_model.pop((model, upstream), None)
            return True
        if estimated is None or estimated < _MIN_ESTIMATE or model in self._windows:
            return False
        with self._lock:
            old = self._scale.get(model, 1.0)
            ratio = min(max(reported / estimated, 0.0), _MAX_SCALE)
            new = old + _SMOOTHING * (ratio - old) if model in self._scale else ratio
            self._scale[model] = new
            applied = self._applied.get(model, 1.0)
            if abs(self._target(model) - applied) / applied > _CALIBRATE_ABOVE - 1:
                self._by_model.pop((model, ""), None)
        return False

    def scale(self, model: str) -> float:
        return self._scale.get(model, 1.0)

    def _target(self, model: str) -> float:
        """What ``model``'s window is divided by: its scale once past the threshold (a
        window scaled down comes back once the reports agree with synopsis again)."""
        scale = self._scale.get(model, 1.0)
        return scale if scale > _CALIBRATE_ABOVE else 1.0

    def close(self) -> None:
        """Close the store, when the proxy opened it."""
        self._root.close()
