"""synopsis's strategies (clear, summarize, both in order) beside its default and the peers:
how they are named and built, the replays that run them, what the reports and the plot make
of them, and which configurations keep as much for less."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import pytest
from benchmarks.compare import __main__ as compare_main
from benchmarks.compare import registry, report, tradeoff_plot
from benchmarks.compare import replay as replay_part
from benchmarks.compare import replay_retention as rr
from benchmarks.compare.inputs import load_transcripts
from benchmarks.compare.synopsis_system import SynopsisSystem

if TYPE_CHECKING:
    from pathlib import Path

    from benchmarks.compare.systems import Items

CLEARED = "[synopsis: cleared"
"""How a tool output synopsis cleared begins."""


def test_a_strategy_is_named_after_synopsis_and_built_with_its_summarizer():
    assert registry.strategy("synopsis:clear+summarize") == ("clear", "summarize")
    assert registry.strategy("synopsis:summarize") == ("summarize",)
    assert registry.strategy("synopsis") is None
    assert registry.strategy("langchain-clear") is None
    with pytest.raises(SystemExit, match="unknown strategy 'prune'"):
        registry.strategy("synopsis:prune")
    assert registry.strategy_names("clear,,summarize") == ["synopsis:clear", "synopsis:summarize"]
    system = registry.create("synopsis:clear")
    assert isinstance(system, SynopsisSystem)
    assert (system.name, system.summarizer) == ("synopsis:clear", "fake")
    assert system.strategy == ("clear",)
    assert system.label.endswith(", strategy clear")
    plain = registry.create_non_llm("synopsis:clear+summarize")
    assert isinstance(plain, SynopsisSystem)
    assert (plain.summarizer, plain.strategy) == ("rules", ("clear", "summarize"))
    assert registry.create("synopsis").name == "synopsis"


def _variant(system: str, retained: tuple[int, int], sent: int, usd: float, **extra: Any):
    totals: dict[str, Any] = {m: [0, 0] for m in rr.MEASURES}
    totals.update(
        paths=list(retained),
        compactions=4,
        tokens_sent=sent,
        bursts=1,
        summarizer_calls=extra.get("calls", 2),
        invalid=extra.get("invalid", {"openai": 0, "anthropic": 0}),
        landed=[0.5] * 4,
        cost={
            p: {"usd": usd * (2 if p == "anthropic" else 1), "cached_tokens": 0, "tokens": sent}
            for p in ("openai", "anthropic")
        },
    )
    return {
        "system": system,
        "label": extra.get("label", system),
        "target": extra.get("target"),
        "default": extra.get("default", False),
        "totals": totals,
        "sessions": {},
        "raised": {},
        **({"strategy": extra["strategy"]} if "strategy" in extra else {}),
    }


def _block() -> dict[str, Any]:
    variants = {
        "synopsis@0.3": _variant("synopsis", (3, 10), 700, 0.5, target=0.3),
        "synopsis@0.5": _variant("synopsis", (8, 10), 1000, 1.0, target=0.5, default=True),
        "synopsis:clear": _variant(
            "synopsis", (8, 10), 900, 0.75, target=0.5, strategy="clear", calls=0
        ),
        "synopsis:summarize": _variant(
            "synopsis", (8, 10), 1000, 1.0, target=0.5, strategy="summarize"
        ),
        "langchain-clear": _variant(
            "langchain-clear", (9, 10), 950, 1.25, invalid={"openai": 1, "anthropic": 2}
        ),
        "zrb": _variant("zrb", (2, 10), 900, 0.25),
    }
    return {"sessions": ["s"], "left_out": {}, "variants": variants}


def test_a_configuration_is_beaten_by_those_keeping_as_much_for_less():
    block = _block()
    assert set(rr.configurations(block)) == set(block["variants"]) - {"synopsis@0.3"}
    beaten = rr.beaten(block)
    # langchain keeps more for fewer tokens but a higher price; summarize's figures are the
    # default's, so neither beats the other
    assert beaten["synopsis@0.5"] == {
        "synopsis:clear": ["tokens", "openai", "anthropic"],
        "langchain-clear": ["tokens"],
    }
    assert beaten["synopsis:summarize"] == beaten["synopsis@0.5"]
    assert beaten["synopsis:clear"] == {}
    # nothing keeps more than langchain; zrb is cheaper than clear at either price
    assert beaten["langchain-clear"] == {}
    assert beaten["zrb"] == {"synopsis:clear": ["tokens"]}
    del block["variants"]["synopsis:clear"]["totals"]["cost"]  # measured before the costs
    assert rr.beaten(block)["synopsis@0.5"] == {
        "synopsis:clear": ["tokens"],
        "langchain-clear": ["tokens"],
    }
    assert rr.bettering(block) == {"langchain-clear": [], "zrb": [0.3]}  # targets, not clear
    assert rr.cost_of(block["variants"]["zrb"]["totals"], "anthropic") == 0.5


def _results() -> dict[str, Any]:
    return {
        "replay_retention": {
            "trigger_share": 0.8,
            "peer_landing": 0.5,
            "default_target": 0.5,
            "default_strategy": "summarize",
            "by_window": {"8000": _block()},
        }
    }


def test_the_strategies_table_has_every_figure_a_default_is_chosen_by():
    results = _results()
    block = results["replay_retention"]["by_window"]["8000"]
    table = report.strategies_table(block)
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in table[2:]}
    assert list(rows) == [
        "synopsis@0.5 (default)",
        "synopsis:clear",
        "synopsis:summarize",
        "langchain-clear",
        "zrb",
    ]
    clear = rows["synopsis:clear"]
    assert clear[1:7] == ["$1.50", "$0.7500", "900", "4", "1", "0"]
    assert clear[7] == "80.0%"  # paths; no request was removed
    assert clear[10:12] == ["80.0%", "100.0%"]
    assert rows["langchain-clear"][11] == "50.0%"  # 2 of 4 refused by one provider
    assert rows["synopsis:summarize"][12] == (
        "synopsis:clear (tokens, openai, anthropic); langchain-clear (tokens) |"
    )
    assert rows["zrb"][12] == "synopsis:clear (tokens) |"
    assert rows["langchain-clear"][12] == "none |"
    text = "\n".join(report.replay_retention_lines(results))
    assert "## Clearing, summarizing, or both" in text
    assert "(strategy `summarize`)" in text
    assert "Nothing keeps as much for less than: synopsis:clear, langchain-clear." in text
    # the other tables show each strategy beside the default
    assert sum("strategy clear" in line for line in report.tradeoff_table(results, "8000")) == 1
    assert len(report.replay_retention_table(results, "8000")) == 2 + 5
    for v in block["variants"].values():
        v.pop("strategy", None)
        v["totals"].pop("invalid")
    assert report.strategies_table(block) == []
    assert report.strategies_lines(results) == []
    assert report._valid(block["variants"]["zrb"]["totals"]) == "–"
    assert report._valid({"compactions": 0, "invalid": {}}) == "–"


def test_the_plot_shows_each_strategy_as_a_point_of_its_own(tmp_path: Path):
    block = _block()
    ours, peers = tradeoff_plot.points(block)
    assert [p[0] for p in ours] == [0.3, 0.5]  # the target line, default strategy
    assert [p[0] for p in peers] == ["langchain-clear", "zrb"]
    assert tradeoff_plot.strategy_points(block) == [
        ("clear", 900.0, 80.0),
        ("summarize", 1000.0, 80.0),
    ]
    pytest.importorskip("matplotlib")
    path = tradeoff_plot.draw(_results(), tmp_path / tradeoff_plot.FILENAME)
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_compaction_a_provider_would_refuse_is_counted_for_that_provider():
    session = rr.Session.of("s", [{"role": "user", "content": "Fix src/a.py."}])
    before: Items = [
        {"role": "user", "content": "Fix src/a.py."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    tally = rr.Tally()
    rr.measure(tally, session, before, [before[0], before[2]], appended=3)  # an orphaned result
    rr.measure(tally, session, before, before[:1], appended=3)
    assert tally.invalid == {"openai": 1, "anthropic": 1}
    other = rr.Tally()
    other.merge(tally)
    assert other.as_json()["invalid"] == {"openai": 1, "anthropic": 1}


class _Peer:
    name = "peer"
    label = "a peer"


def test_a_run_replays_each_strategy_beside_synopsis_and_only_beside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    ran: dict[str, list[str]] = {}

    def replay_run(systems: Any, transcripts: Any, progress: Any) -> dict[str, Any]:
        ran["replay"] = [s.name for s in systems]
        errors = {s.name: {"error": "not run"} for s in systems}
        return {"session": "s", "window": 1000, "systems": errors}

    def retention_run(peers: Any, transcripts: Any, progress: Any, **options: Any):
        ran["retention"] = options["strategies"]
        raise SystemExit("stop here")

    monkeypatch.setattr(replay_part, "run", replay_run)
    monkeypatch.setattr(rr, "run", retention_run)
    out = ["--out", str(tmp_path)]
    argv = ["compare", "--parts", "replay", "--systems", "synopsis", "--strategies", "clear"]
    monkeypatch.setattr(sys, "argv", argv + out)
    compare_main.main()
    assert ran["replay"] == ["synopsis", "synopsis:clear"]
    saved = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    assert saved["labels"]["synopsis:clear"].endswith(", strategy clear")
    monkeypatch.setattr(sys, "argv", [*argv[:-1], "", *out])
    compare_main.main()
    assert ran["replay"] == ["synopsis"]
    real = registry.create
    monkeypatch.setattr(registry, "create", lambda name: _Peer() if name == "peer" else real(name))
    monkeypatch.setattr(sys, "argv", [*argv[:4], "peer", *argv[5:], *out])
    compare_main.main()
    assert ran["replay"] == ["peer"]  # no strategy without synopsis
    monkeypatch.setattr(sys, "argv", [*argv[:2], "replay-retention", *argv[3:], *out])
    with pytest.raises(SystemExit, match="stop here"):
        compare_main.main()
    assert ran["retention"] == ["clear"]


def test_the_replay_part_runs_each_strategy_on_the_session():
    transcripts = load_transcripts()
    systems = [registry.create(f"synopsis:{s}") for s in registry.STRATEGIES]
    played = replay_part.run(systems, transcripts, lambda _: None)["systems"]
    for name in ("synopsis:clear", "synopsis:summarize", "synopsis:clear+summarize"):
        assert played[name]["compactions"] > 0, name
        assert played[name]["invalid_requests"] == 0, name
    clear, summarize = played["synopsis:clear"], played["synopsis:summarize"]
    # clearing alone summarizes only as the last resort: some compactions only cleared
    assert clear["summarizer_calls"] < clear["compactions"]
    assert clear["summarizer_calls"] < summarize["summarizer_calls"]


def test_a_strategy_clears_or_summarizes_as_it_says():
    items = load_transcripts()["codex-compaction-config-change"]
    budget = replay_part.BUDGET
    cleared = SynopsisSystem("fake", strategy=("clear",))
    summarized = SynopsisSystem("fake", strategy=("summarize",))
    out = cleared.step(list(items), budget)
    assert out is not None
    assert any(str(m.get("content") or "").startswith(CLEARED) for m in out)
    out = summarized.step(list(items), budget)
    assert out is not None
    assert not any(str(m.get("content") or "").startswith(CLEARED) for m in out)


def test_the_retention_replay_runs_each_strategy_at_the_default_target():
    small = {k: v for k, v in load_transcripts().items() if k.startswith("taubench-airline-task3")}
    strategies = list(registry.STRATEGIES)
    r = rr.run([], small, lambda _: None, windows=[8_000], targets=(), strategies=strategies)
    assert r["default_strategy"] in registry.STRATEGIES
    variants = r["by_window"]["8000"]["variants"]
    default = next(v for v in variants.values() if v["default"])
    # the default strategy named is the default: not a token more for being named
    assert variants[f"synopsis:{r['default_strategy']}"]["totals"] == default["totals"]
    clear = variants["synopsis:clear"]
    assert (clear["strategy"], clear["target"], clear["default"]) == (
        "clear",
        r["default_target"],
        False,
    )
    assert clear["raised"] == {}
    assert clear["totals"]["summarizer_calls"] == 0
    assert clear["totals"]["invalid"] == {"openai": 0, "anthropic": 0}
    json.dumps(r)
