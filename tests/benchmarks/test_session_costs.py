"""What a replayed session cost each system: bursts, landings, summarizer calls and the input
priced with a prefix cache, measured the same way for synopsis and the peers, and the report
sections that show them."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

import pytest
from benchmarks.compare import replay as replay_part
from benchmarks.compare import replay_retention as rr
from benchmarks.compare import report, systems
from benchmarks.compare import session_costs as sc
from benchmarks.compare.inputs import load_transcripts
from benchmarks.compare.judge import tokens
from benchmarks.compare.synopsis_system import SynopsisSystem

from synopsis.pricing import ANTHROPIC, OPENAI

if TYPE_CHECKING:
    from benchmarks.compare.systems import Items


def _items(n: int) -> Items:
    return [{"role": "user", "content": f"message {i} " + "word " * 20} for i in range(n)]


def test_a_meter_prices_each_request_against_the_one_before():
    items = _items(6)
    summary = {"role": "user", "content": "Summary."}
    requests: list[tuple[Items, bool]] = [
        (items[:2], False),
        (items[:3], False),
        ([items[0], summary, items[3]], True),  # a compaction keeps only the first message
        ([items[0], summary, items[3], items[4]], False),
        ([items[0], {"role": "user", "content": "Again."}, items[5]], True),  # a burst
        (items[:1], True),  # another: three compactions, two of them in a burst
    ]
    meter = sc.Meter(window=1000)
    for sent, compacted in requests:
        meter.request(sent, tokens(sent), compacted=compacted, calls=int(compacted))
    data = meter.as_json()
    assert data["bursts"] == 2
    assert meter.compactions == [2, 4, 5]
    assert data["landed"] == [round(tokens(r) / 1000, 4) for r, done in requests if done]
    assert data["summarizer_calls"] == 3
    one = tokens([items[0]]) - tokens([])
    shared = [
        0,
        tokens(items[:2]) - tokens([]),
        one,
        tokens([items[0], summary, items[3]]) - tokens([]),
        one,
        one,
    ]
    sizes = [tokens(r) for r, _ in requests]
    for prices in (OPENAI, ANTHROPIC):
        cost = data["cost"][prices.name]
        assert cost["cached_tokens"] == sum(shared)
        assert cost["tokens"] == sum(sizes)
        assert cost["hits"] == 5
        assert cost["requests"] == 6
        expected = sum(
            prices.cost(read=s, written=size - s) for s, size in zip(shared, sizes, strict=True)
        )
        assert cost["usd"] == pytest.approx(expected, abs=1e-6)


def test_equal_messages_in_other_dicts_are_read_from_the_cache():
    # A system that converts the history to its own objects and back hands new dicts.
    items = _items(3)
    meter = sc.Meter(window=1000)
    meter.request(items[:2], tokens(items[:2]), compacted=False)
    copies = [dict(i) for i in items]
    meter.request(copies, tokens(copies), compacted=False)
    assert meter.caches["openai"].requests[1].shared == tokens(items[:2]) - tokens([])


def test_sessions_are_pooled():
    parts = []
    for n in (4, 6):
        meter = sc.Meter(window=100)
        meter.request(_items(n), 90, compacted=True, calls=2)
        parts.append(meter.as_json())
    pooled = sc.merged(parts)
    assert pooled["bursts"] == 0
    assert pooled["summarizer_calls"] == 4
    assert pooled["landed"] == [0.9, 0.9]
    assert pooled["cost"]["anthropic"]["tokens"] == 180
    assert pooled["cost"]["anthropic"]["usd"] == pytest.approx(2 * 90 * ANTHROPIC.write / 1e6)
    assert sc.merged([])["cost"]["openai"] == {
        "usd": 0,
        "cached_tokens": 0,
        "tokens": 0,
        "hits": 0,
        "requests": 0,
    }


def test_nothing_compacted_reads_each_request_but_its_newest_messages_from_the_cache():
    items: Items = []
    for i in range(4):
        items += [{"role": "user", "content": f"do {i}"}, {"role": "assistant", "content": "ok"}]
    whole = sc.uncompacted(items, window=1000)
    sent = [items[: 2 * i + 1] for i in range(4)]
    assert whole["tokens_sent"] == sum(map(tokens, sent))
    assert whole["cost"]["openai"]["requests"] == 4
    assert whole["cost"]["openai"]["hits"] == 3
    assert whole["cost"]["openai"]["cached_tokens"] == sum(
        tokens(r) - tokens([]) for r in sent[:-1]
    )
    assert (whole["bursts"], whole["landed"], whole["summarizer_calls"]) == (0, [], 0)


def test_the_fake_summarizer_is_counted_wherever_it_is_called():
    module = types.ModuleType("benchmarks.compare.peers._counted_here")
    module.fake_summary = systems.fake_summary  # type: ignore[attr-defined]
    outside = types.ModuleType("elsewhere")
    outside.fake_summary = systems.fake_summary  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    sys.modules[outside.__name__] = outside
    try:

        def _part_candidates() -> str:  # zrb's rendering: not a summarizer call
            return module.fake_summary(1)  # type: ignore[no-any-return]

        with sc.counting_summaries() as count:
            assert module.fake_summary(3) == systems.fake_summary(3)
            assert count() == 2  # the module's and the one in systems itself
            _part_candidates()
            outside.fake_summary(1)  # not one of the benchmark's modules
            assert count() == 2
        assert module.fake_summary is systems.fake_summary
    finally:
        del sys.modules[module.__name__], sys.modules[outside.__name__]


def test_the_replay_part_measures_what_the_session_cost_synopsis():
    transcripts = load_transcripts()
    played = replay_part.run([SynopsisSystem("fake")], transcripts, lambda _: None)
    ours = played["systems"]["synopsis"]
    assert ours["compactions"] > 0
    # A compaction asks the fake summarizer for one summary at most: one that only made a
    # tool's large output small to land its tail asks for none.
    assert 0 < ours["summarizer_calls"] <= ours["compactions"]
    assert len(ours["landed"]) == ours["compactions"]
    assert all(0 < share <= 1 for share in ours["landed"])
    assert ours["cost"]["openai"]["tokens"] == ours["tokens_sent"]
    whole = played["uncompacted"]
    assert whole["tokens_sent"] > ours["tokens_sent"]
    assert whole["cost"]["openai"]["usd"] > ours["cost"]["openai"]["usd"]
    text = report.markdown({"meta": _META, "labels": {"synopsis": "synopsis"}, "replay": played})
    rows = [line for line in text.splitlines() if line.startswith("| synopsis |")]
    assert rows[1].startswith(
        f"| synopsis | {ours['compactions']} | {ours['bursts']} | "
        f"{sc.landed_text(ours['landed'])} | {ours['summarizer_calls']} | "
        f"{ours['tokens_sent']:,} | {sc.usd(ours['cost']['openai'])} |"
    )
    assert "| nothing compacted | 0 | 0 | – | 0 |" in text
    assert "openai: $1.25/M input, $0.125/M cached" in text


_META = {
    "date": "now",
    "machine": "m",
    "python": "3",
    "command": "c",
    "seconds": 1.0,
    "versions": {},
}


def test_synopsis_counts_the_summaries_its_rules_wrote():
    small = {k: v for k, v in load_transcripts().items() if k.startswith("taubench-airline-task3")}
    results = {"replay_retention": rr.run([], small, lambda _: None, windows=[8_000], targets=())}
    block = results["replay_retention"]["by_window"]["8000"]
    ours = next(v for v in block["variants"].values() if v["default"])["totals"]
    assert ours["compactions"] > 0
    assert 0 < ours["summarizer_calls"] <= ours["compactions"]
    assert ours["cost"]["anthropic"]["tokens"] == ours["tokens_sent"]
    assert block["uncompacted"]["tokens_sent"] > ours["tokens_sent"]
    table = report.retention_costs_table(block)
    assert table[2].startswith(
        f"| {next(v for v in block['variants'].values() if v['default'])['label']} (default "
        f"target {results['replay_retention']['default_target']:g}) | {ours['compactions']} |"
    )
    assert table[-1].startswith("| nothing compacted |")
    text = "\n".join(report.replay_retention_lines(results))
    assert "What the sessions cost each system, pooled:" in text


def test_results_from_before_the_costs_show_no_cost_table():
    assert sc.table([("old", {"compactions": 1})], {}) == []
    old = {"session": "s", "window": 1000, "systems": {"x": {"compactions": 1}}}
    assert sc.replay_table({"replay": old, "labels": {"x": "x"}}) == []
    assert sc.landed_text([]) == "–"
    assert sc.cached_share({"cached_tokens": 0, "tokens": 0}) == "–"
    assert sc.usd({"usd": 12.345}) == "$12.35"
    assert sc.usd({"usd": 0.012345}) == "$0.0123"


def test_the_cost_table_of_a_peer(monkeypatch: pytest.MonkeyPatch):
    meter = sc.Meter(window=1000)
    meter.request(_items(3), tokens(_items(3)), compacted=True, calls=1)
    peer: dict[str, Any] = {"compactions": 1, "tokens_sent": tokens(_items(3)), **meter.as_json()}
    lines = sc.table([("a peer", peer)], {})
    assert len(lines) == 3
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells[:5] == ["a peer", "1", "0", sc.landed_text(peer["landed"]), "1"]
    assert cells[7] == "0%"  # the first request reads nothing from the cache
