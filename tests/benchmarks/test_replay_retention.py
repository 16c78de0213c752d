"""The replayed-session retention part, the trade-off and the kit's five-round view: their
pure parts (what a compaction removed, the fixed extractors, the tables and verdicts, keeping
other parts' results on a partial run), run here without the peers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from benchmarks.compare import anchors, report, tradeoff_plot, yardsticks
from benchmarks.compare import replay_retention as rr
from benchmarks.compare.__main__ import PARTS, _merged, _previous
from benchmarks.compare.inputs import load_transcripts
from benchmarks.compare.judge import tokens
from benchmarks.compare.systems import Budget, Items


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_a_request_is_its_first_non_blank_line_squashed_and_cut():
    assert rr.first_line("\n  \n  Fix   the\tparser  \nthen more") == "Fix the parser"
    assert rr.first_line("x" * 100) == "x" * rr.REQUEST_CHARS
    assert rr.first_line(" \n\t") == ""


def test_only_what_a_person_wrote_is_a_request():
    items: Items = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "# AGENTS.md instructions for /repo\nAlways lint."},
        {"role": "user", "content": "Fix the build."},
        {"role": "assistant", "content": "run make"},
        {"role": "user", "content": "make: *** [all] Error 2"},
        {"role": "user", "content": "Stop hook feedback:\nunstaged changes"},
        {"role": "user", "content": "<synopsis-summary>earlier</synopsis-summary>"},
        {"role": "user", "content": "   "},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "Now the docs."}]},
    ]
    assert anchors.person_messages(items) == [2, 4, 9]
    # where observations come back as user turns, nothing after the agent's first turn counts
    assert anchors.person_messages(items, observations_in_user_turns=True) == [2]


def test_constraints_are_sentences_with_the_fixed_words():
    text = (
        "Fix the parser. Never touch the lexer! You must keep Python 3.11.\n"
        "Nice work. Don’t push yet\n"
        "Use tabs instead of spaces? ALWAYS run tests.\n"
        "Never touch the lexer! " + "only " + "y" * 300
    )
    found = rr.constraints(text)
    assert found[:5] == [
        "Never touch the lexer!",
        "You must keep Python 3.11.",
        "Don’t push yet",
        "Use tabs instead of spaces?",
        "ALWAYS run tests.",
    ]
    assert len(found) == 6  # the repeated sentence once; the long one cut
    assert len(found[5]) == rr.CONSTRAINT_CHARS
    assert rr.constraints("The knowledge base is fine. Nevertheless, go on.") == []


def test_removed_is_what_did_not_come_back_word_for_word():
    call = {"role": "assistant", "content": None, "tool_calls": [_call("c1", "read", '{"p": 1}')]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "long output"}
    ok = {"role": "user", "content": "ok"}
    before: Items = [{"role": "system", "content": "S"}, ok, call, result, ok]
    after: Items = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Summary."},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1", "read", '{"p": 1}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "long ou[cut]"},
        ok,
    ]
    # None and "" are the same text; a shortened result is removed; "ok" twice, kept once
    assert rr.removed(before, after) == [result, ok]
    rewritten = dict(call, tool_calls=[_call("c1", "read", '{"p":1}')])
    assert rr.removed([call], [rewritten]) == [call]


def _session() -> rr.Session:
    items: Items = [
        {"role": "system", "content": "You edit code."},
        {"role": "user", "content": "Fix parse_config in src/app/config.py\nDetails follow."},
        {"role": "assistant", "content": "Looking at src/app/config.py and lib/util.py."},
        {"role": "user", "content": "Never change the public API. Also check docs/guide.md."},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks, only run the unit tests now."},
        {"role": "assistant", "content": "Running."},
    ]
    return rr.Session.of("demo", items)


def test_one_compaction_is_measured_on_its_removed_part():
    session = _session()
    assert session.first_request == "Fix parse_config in src/app/config.py"
    before = session.items[:6]
    after: Items = [
        session.items[0],
        {"role": "user", "content": "Earlier: Fix parse_config in src/app/config.py; lib/util.py"},
        session.items[5],
    ]
    tally = rr.Tally()
    rr.measure(tally, session, before, after, appended=6)
    assert tally.compactions == 1
    # removed: messages 1-4; paths config.py, util.py kept, guide.md lost
    assert tally.counts["paths"] == [2, 3]
    # requests removed: messages 1 and 3; only the first one's first line is there
    assert tally.counts["requests"] == [1, 2]
    assert tally.counts["first"] == [1, 1]
    assert tally.counts["constraints"] == [1, 2]  # "only run the unit tests" is kept verbatim
    assert tally.missed["constraints"] == ["Never change the public API."]
    assert tally.missed["paths"] == ["docs/guide.md"]
    assert tally.counts["salient"][1] > 0

    lost = rr.Tally()
    rr.measure(lost, session, before, [session.items[0], session.items[5]], appended=6)
    assert lost.counts["first"] == [0, 1]
    assert lost.first_missed_at == [1]
    data = lost.as_json()
    assert data["paths"] == [0, 3]
    json.dumps(data)


class _KeepLast:
    """A stand-in system: past ``budget.trigger`` messages, keep the system prompt, a summary
    and the last two messages."""

    name = "stub"
    label = "a stub"

    def __init__(self, persists: bool = True) -> None:
        self.persists = persists

    def native(self, items: Items) -> Any:
        return list(items)

    def step(self, history: Any, budget: Budget) -> Any | None:
        if len(history) <= budget.trigger:
            return None
        return [history[0], {"role": "user", "content": "Summary."}, *history[-2:]]

    def items(self, history: Any) -> Items:
        return list(history)


def test_a_replay_compacts_before_model_requests_and_carries_the_output_on():
    session = _session()
    items = session.items
    summary = {"role": "user", "content": "Summary."}
    budget = Budget(trigger=3, keep=1, window=100)
    kept = rr.replay_session(_KeepLast(), session, budget)
    assert kept.requests_made == 3  # one before each assistant message
    assert kept.compactions == 2
    sent = [items[:2], [items[0], summary, *items[2:4]], [items[0], summary, *items[4:6]]]
    assert kept.tokens_sent == sum(map(tokens, sent))
    assert kept.largest == max(map(tokens, sent))
    # carried on: the second compaction removes only what the first one kept
    assert kept.counts["requests"] == [0, 2]
    whole = rr.replay_session(_KeepLast(persists=False), session, budget)
    assert whole.compactions == 2
    # the stored history stays whole: the second compaction removes the first request again
    assert whole.counts["requests"] == [0, 3]
    assert whole.tokens_sent == kept.tokens_sent
    assert kept.over_window == 0
    assert rr.replay_session(_KeepLast(), session, Budget(3, 1, 10)).over_window == 3


def test_peers_keep_up_to_where_synopsis_lands_with_the_same_trigger():
    budget = rr.peer_budget(32_000, 10_000)
    assert budget == Budget(trigger=25_600, keep=6_000, window=32_000)
    assert rr.peer_budget(8_000, 5_000).keep == 1


def _variant(system: str, target: float | None, totals: dict[str, Any], **extra: Any):
    base: dict[str, Any] = {m: [0, 0] for m in rr.MEASURES}
    base.update(compactions=2, model_requests=10, tokens_sent=1000, missed_constraints=[])
    base.update(totals)
    return {
        "system": system,
        "target": target,
        "default": extra.get("default", False),
        "label": extra.get("label", system),
        "totals": base,
        "sessions": {"s": {**base, "missed_constraints": extra.get("missed", [])}},
        "raised": {},
    }


def _results() -> dict[str, Any]:
    variants = {
        "synopsis@0.3": _variant(
            "synopsis", 0.3, {"paths": [5, 10], "requests": [1, 2], "tokens_sent": 800}
        ),
        "synopsis@0.5": _variant(
            "synopsis",
            0.5,
            {
                "paths": [9, 10],
                "requests": [2, 2],
                "first": [2, 2],
                "constraints": [3, 4],
                "salient": [7, 10],
            },
            default=True,
            missed=["Never push."],
        ),
        "langchain": _variant("langchain", None, {"paths": [1, 10], "tokens_sent": 1200}),
        "zrb": _variant("zrb", None, {"paths": [0, 10], "tokens_sent": 900}),
    }
    block = {"sessions": ["s"], "left_out": {"big": "system prompt too big"}, "variants": variants}
    return {
        "replay_retention": {
            "trigger_share": 0.8,
            "peer_landing": 0.5,
            "default_target": 0.5,
            "by_window": {"8000": block},
        }
    }


def test_the_tables_the_verdicts_and_the_trade_off_sentence():
    results = _results()
    block = results["replay_retention"]["by_window"]["8000"]
    verdicts = rr.verdicts(block, 8000)
    assert [met for _, met in verdicts] == [True, True, True, False]
    assert "90.0% of the removed part's file paths" in verdicts[0][0]
    table = report.replay_retention_table(results, "8000")
    assert len(table) == 2 + 3  # synopsis's default and two peers
    assert table[2].startswith("| synopsis (default target 0.5) | 2.0 | 1,000 | 0 | 90.0% |")
    trade = report.tradeoff_table(results, "8000")
    assert [row.split(" | ")[1] for row in trade[2:]] == ["0.3", "0.5 (default)", "–", "–"]
    assert "91.7%" in trade[3]  # (9 + 2) / (10 + 2)
    sentence = report.tradeoff_sentence(results, "8000")
    assert "not more than every peer" in sentence
    assert "zrb sends 900 tokens" in sentence
    assert "langchain keeps" not in sentence
    assert sentence.endswith("for no more tokens: langchain: 0.3, 0.5; zrb: 0.3.")
    text = "\n".join(report.replay_retention_lines(results))
    assert "big left out: system prompt too big" in text
    assert "**NOT met**" in text
    assert "`Never push.`" in text


def test_the_plot_points_and_labels():
    block = _results()["replay_retention"]["by_window"]["8000"]
    ours, peers = tradeoff_plot.points(block)
    assert [p[0] for p in ours] == [0.3, 0.5]
    assert ours[1][2] == pytest.approx(100 * 11 / 12)
    assert [p[0] for p in peers] == ["langchain", "zrb"]
    same = [(0.2, 10.0, 5.0), (0.3, 10.0, 5.0), (0.5, 20.0, 9.0)]
    assert tradeoff_plot.target_labels(same, 0.5) == {
        (10.0, 5.0): "0.2, 0.3",
        (20.0, 9.0): "0.5 (default)",
    }


def test_the_plot_is_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    path = tradeoff_plot.draw(_results(), tmp_path / tradeoff_plot.FILENAME)
    assert path.read_bytes().startswith(b"\x89PNG")


def _kit_run(overall: float, safety: float, constraint: float, chars: int, ok: bool):
    by = {t: {"round1": 1.0, "final": 1.0, "cliff_round": None} for t in ("fact",)}
    by["safety_rule"] = {"round1": safety, "final": safety, "cliff_round": None}
    by["hard_constraint"] = {"round1": constraint, "final": constraint, "cliff_round": None}
    return {"overall_final": overall, "compliant": ok, "budget_chars": chars, "by_type": by}


def test_the_kit_five_round_targets():
    result = {
        "kit": "kit",
        "rounds": 5,
        "hold_chars": 700,
        "seeded": {
            "synopsis": {
                "none": _kit_run(1.0, 1.0, 1.0, 0, True),
                "0.1": _kit_run(0.5, 1.0, 1.0, 600, True),
                "0.2": _kit_run(0.9, 1.0, 0.75, 1200, True),
                "0.3": _kit_run(1.0, 1.0, 1.0, 1800, False),
            },
            "checklist": {"0.1": _kit_run(0.4, 1.0, 1.0, 600, True)},
        },
    }
    verdicts = yardsticks.five_round_verdicts(result)
    assert [met for _, met in verdicts] == [True, True, False, False]
    assert "over budget" in verdicts[2][0]
    # 10% (600 characters) cannot hold 700; 20% can and loses a constraint
    assert "(700 characters: 20%, 30%); lost at 20%" in verdicts[3][0]
    lines = yardsticks.five_round_lines(result)
    assert "| checklist | 10% | yes | 40% | 100% | 100% |" in lines
    assert sum(line.startswith("- synopsis,") for line in lines) == 4


def test_a_partial_run_keeps_the_other_parts_results(tmp_path):
    path = tmp_path / "compare.json"
    old = {
        "meta": {"date": "then"},
        "labels": {"zrb": "zrb old"},
        "speed": {"old": True},
        "replay_retention": {"old": True},
    }
    path.write_text(json.dumps(old), encoding="utf-8")
    new = {"meta": {"date": "now"}, "labels": {"synopsis": "s"}, "replay_retention": {"new": 1}}
    assert _previous(path, list(PARTS)) == {}  # a full run starts afresh
    merged = _merged(new, ["replay-retention"], _previous(path, ["replay-retention"]))
    assert merged["speed"] == {"old": True}
    assert merged["replay_retention"] == {"new": 1}
    assert merged["labels"] == {"zrb": "zrb old", "synopsis": "s"}
    assert merged["meta"]["measured"] == {"speed": "then", "replay_retention": "now"}
    path.write_text("{not json", encoding="utf-8")
    assert _previous(path, ["speed"]) == {}


def test_synopsis_replays_real_sessions_at_its_default_and_a_target():
    small = {k: v for k, v in load_transcripts().items() if k.startswith("taubench-airline-task3")}
    results = {
        "replay_retention": rr.run([], small, lambda _: None, windows=[8_000], targets=(0.3,))
    }
    r = results["replay_retention"]
    variants = r["by_window"]["8000"]["variants"]
    assert set(variants) == {"synopsis@0.3", f"synopsis@{r['default_target']:g}"}
    ours = next(v for v in variants.values() if v["default"])
    assert ours["raised"] == {}
    assert ours["totals"]["model_requests"] == 30
    assert ours["totals"]["over_window"] == 0
    text = "\n".join(report.replay_retention_lines(results))
    assert "no peer was run" in text
    json.dumps(results)
