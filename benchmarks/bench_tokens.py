"""Token counting at 1k, 10k and 100k messages, built by repeating the bundled transcripts.

Reports, per size: a full count with an empty cache; a recount after one appended message
through the per-message identity cache; the same through a TokenLedger; and the ratio of the
100k to the 1k append-recount cost (near 1 means the cost does not grow with the history).
Timings are medians of repeated runs with ``time.perf_counter`` (full counts: 7, 5 and 3 runs;
appends: 15 each). The whole run takes well under a minute.

Run: ``python -m benchmarks.bench_tokens``.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from benchmarks._harness import timed
from synopsis.formats import openai_chat
from synopsis.tokens import TiktokenCounter, TokenLedger, get_encoding

if TYPE_CHECKING:
    from synopsis.messages import Message

SIZES = (1_000, 10_000, 100_000)
FULL_REPEATS = {1_000: 7, 10_000: 5, 100_000: 3}
APPEND_REPEATS = 15
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "examples" / "transcripts"


class Row(NamedTuple):
    size: int
    tokens: int
    full_ms: float
    alone_ms: float
    cache_ms: float
    ledger_ms: float


def load_items() -> list[list[dict[str, Any]]]:
    out = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        out.append([json.loads(line) for line in lines if line.strip()])
    if not out:
        raise SystemExit(f"no transcripts under {TRANSCRIPTS}")
    return out


def build_history(transcripts: list[list[dict[str, Any]]], size: int) -> list[Message]:
    """``size`` distinct Message objects: the transcripts decoded again and again."""
    history: list[Message] = []
    while len(history) < size:
        for items in transcripts:
            history.extend(openai_chat.decode(items))
    return history[:size]


def appended_item(transcripts: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """A real tool result of about 2,000 characters, the size of a typical observation."""
    items = [i for t in transcripts for i in t if isinstance(i.get("content"), str)]
    return min(items, key=lambda i: abs(len(i["content"]) - 2_000))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def measure(transcripts: list[list[dict[str, Any]]], item: dict[str, Any], size: int) -> Row:
    history = build_history(transcripts, size)

    full: list[float] = []
    counter = TiktokenCounter()
    for _ in range(FULL_REPEATS[size]):
        counter = TiktokenCounter()  # empty cache: every message is tokenized
        full.append(timed(partial(counter.count_messages, history))[0])
    tokens = counter.count_messages(history)
    gc.collect()

    # The floor: tokenizing the appended message on its own.
    alone = [
        timed(partial(counter.count_message, openai_chat.decode([item])[0]))[0] for _ in range(15)
    ]

    # `counter` is now warm with every message of `history`: only the new one is tokenized.
    cache: list[float] = []
    for _ in range(APPEND_REPEATS):
        history.append(openai_chat.decode([item])[0])
        cache.append(timed(partial(counter.count_messages, history))[0])

    ledger = TokenLedger(counter)
    ledger.sync(history)
    via_ledger: list[float] = []
    for _ in range(APPEND_REPEATS):
        history.append(openai_chat.decode([item])[0])
        via_ledger.append(timed(partial(ledger.sync, history))[0])
    if ledger.total != counter.count_messages(history) or ledger.recounts:
        raise SystemExit("the ledger disagrees with a fresh count")
    return Row(
        size, tokens, median_ms(full), median_ms(alone), median_ms(cache), median_ms(via_ledger)
    )


def main() -> None:
    started = time.perf_counter()
    get_encoding("o200k_base")  # load the vocabulary outside the timings
    transcripts = load_items()
    item = appended_item(transcripts)
    rows = [measure(transcripts, item, size) for size in SIZES]

    print(f"appended message: {len(item['content']):,} characters (a real tool result)")
    head = (
        f"{'messages':>9} {'tokens':>12} {'full count ms':>14} {'new msg alone ms':>17} "
        f"{'append: cache ms':>17} {'append: ledger ms':>18}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.size:>9,} {r.tokens:>12,} {r.full_ms:>14.1f} {r.alone_ms:>17.3f} "
            f"{r.cache_ms:>17.3f} {r.ledger_ms:>18.3f}"
        )
    small, large = rows[0], rows[-1]
    rate = large.tokens / (large.full_ms / 1e3) / 1e6
    print(f"full count throughput at {large.size:,} messages: {rate:.2f}M tokens/s")
    print(
        f"append recount, {large.size:,} / {small.size:,} messages: "
        f"cache x{large.cache_ms / small.cache_ms:.1f}, "
        f"ledger x{large.ledger_ms / small.ledger_ms:.2f} "
        f"(tokenizing the new message alone: x{large.alone_ms / small.alone_ms:.2f})"
    )
    print(f"total benchmark time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
