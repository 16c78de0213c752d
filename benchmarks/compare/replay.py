"""Per-turn cost over a replayed session: the bundled Codex session (174 messages, about 109k
tokens) played back message by message into a 32k window. Before each assistant message (a
model request) the system gets the history as it stands and its answer becomes the history;
the messages recorded after that are appended to it, as an agent loop would. A system whose
compaction rewrites only the outgoing request and leaves the stored history whole (its
``persists`` is false) keeps the whole history and compacts again on the next request, as it
does in production; one whose ``state`` says what a part of it that does persist left carries
that on (:func:`benchmarks.compare.systems.carried`).

Beside the time per request, what the session cost each system
(:mod:`benchmarks.compare.session_costs`): its compactions, those within two requests of the
one before, where each landed, its summarizer calls, and every request's input priced with a
provider's prefix cache; and the same session with nothing compacted, as a baseline."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from benchmarks.compare.judge import call_step, problems, tokens
from benchmarks.compare.session_costs import Meter, counting_summaries, uncompacted
from benchmarks.compare.systems import Budget, Items, System, carried

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

SESSION = "codex-compaction-config-change"
WINDOW = 32_000
BUDGET = Budget(trigger=int(WINDOW * 0.8), keep=int(WINDOW * 0.3), window=WINDOW)


def replay(system: System, items: Items) -> dict[str, Any]:
    # One untimed call first: lazy imports, a tokenizer's vocabulary, a compiled pattern are
    # paid once per process, not per request.
    call_step(system, system.native(items[:3]), BUDGET)
    history: Items = []
    times: list[float] = []
    compactions = invalid = sent_tokens = 0
    peak = 0
    meter = Meter(WINDOW)
    with counting_summaries() as summaries:
        for item in items:
            if item.get("role") == "assistant" and history:
                native = system.native(history)
                calls = summaries()
                result, seconds = call_step(system, native, BUDGET)
                calls = summaries() - calls
                times.append(seconds)
                sent = history
                if result is not None:
                    compactions += 1
                    sent = system.items(result)
                    history = carried(system, history, sent, result)
                size = tokens(sent)
                sent_tokens += size
                peak = max(peak, size)
                invalid += bool(problems(sent, "openai"))
                meter.request(sent, size, compacted=result is not None, calls=calls)
            history = [*history, item]
    return {
        "requests": len(times),
        "compactions": compactions,
        "mean_ms": statistics.fmean(times) * 1e3,
        "median_ms": statistics.median(times) * 1e3,
        "total_ms": sum(times) * 1e3,
        "tokens_sent": sent_tokens,
        "largest_request": peak,
        "invalid_requests": invalid,
        **meter.as_json(),
    }


def run(
    systems: Sequence[System], transcripts: dict[str, Items], progress: Callable[[str], None]
) -> dict[str, Any]:
    items = transcripts[SESSION]
    out: dict[str, Any] = {
        "session": SESSION,
        "window": WINDOW,
        "uncompacted": uncompacted(items, WINDOW),
        "systems": {},
    }
    for system in systems:
        try:
            out["systems"][system.name] = replay(system, items)
        except Exception as error:  # a peer that breaks mid-session is a result too
            out["systems"][system.name] = {"error": f"{type(error).__name__}: {error}"[:300]}
        progress(f"replay: {system.name} done")
    return out
