"""The cost of deciding whether to compact after one appended message, at 1k, 10k and 100k
messages built by repeating the bundled transcripts.

Deciding is what an agent loop pays on every turn: sync the token ledger with the grown
history (only the new message is tokenized), find the running user turn, and ask the governor.
With cached counts it should follow the size of the new message, not the history; the line to
read is the ratio of the 100k cost to the 1k cost (target below 3). For scale, the run also
times a full recount of the history (what deciding costs without the ledger) and planning a
split (paid only when the governor says yes).

Run: ``python -m benchmarks.bench_decide``.
"""

from __future__ import annotations

import time
from functools import partial

from benchmarks._harness import timed
from benchmarks.bench_tokens import (
    APPEND_REPEATS,
    SIZES,
    appended_item,
    build_history,
    load_items,
    median_ms,
)
from synopsis.formats import openai_chat
from synopsis.models import context_window
from synopsis.planning import GovernorState, Keep, Measure, decide, plan_split, turn_key
from synopsis.tokens import TiktokenCounter, TokenLedger, get_encoding

MODEL = "gpt-4.1"


def one_size(transcripts, item, size: int) -> tuple[float, float, float]:
    history = build_history(transcripts, size)
    counter = TiktokenCounter()
    ledger = TokenLedger(counter)
    ledger.sync(history)
    window = context_window(MODEL)
    state = GovernorState()

    def decide_now(messages) -> object:
        tokens = ledger.sync(messages)
        return decide(Measure(tokens, len(messages), window), state=state, turn=turn_key(messages))

    samples = []
    for _ in range(APPEND_REPEATS):
        history.append(openai_chat.decode([item])[0])
        samples.append(timed(partial(decide_now, history))[0])

    full = [timed(partial(counter.count_messages, history))[0] for _ in range(3)]
    counts = [counter.count_message(m) for m in history]
    planning = [
        timed(
            lambda: plan_split(
                history, counts, keep=Keep.messages(20), threshold=window, window=window
            )
        )[0]
        for _ in range(3)
    ]
    return median_ms(samples), median_ms(full), median_ms(planning)


def main() -> None:
    started = time.perf_counter()
    get_encoding("o200k_base")
    transcripts = load_items()
    item = appended_item(transcripts)
    rows = [(size, *one_size(transcripts, item, size)) for size in SIZES]
    head = f"{'messages':>9} {'decide ms':>10} {'cached recount ms':>18} {'plan split ms':>14}"
    print(head)
    print("-" * len(head))
    for size, dec, full, plan in rows:
        print(f"{size:>9,} {dec:>10.3f} {full:>18.2f} {plan:>14.2f}")
    ratio = rows[-1][1] / rows[0][1]
    verdict = "meets" if ratio < 3 else "misses"
    print(
        f"decide after one append, {rows[-1][0]:,} / {rows[0][0]:,} messages: x{ratio:.2f} "
        f"({verdict} the target of x3)"
    )
    print(f"total benchmark time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
