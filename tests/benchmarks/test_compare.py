"""The comparison harness's own parts, run on synopsis alone (the peers live in .venv-bench):
the inputs are what they claim, the judge and the anchors count what they claim, and the
report shows what was measured."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from benchmarks.compare import (
    anchors,
    registry,
    replay,
    report,
    retention,
    scale,
    speed,
    speed_report,
    validity,
)
from benchmarks.compare.inputs import build_history, leading_system, load_transcripts, next_item
from benchmarks.compare.judge import Tally, problems, rejected, tokens
from benchmarks.compare.synopsis_system import SynopsisSystem
from benchmarks.compare.systems import Budget, fake_summary

import synopsis

META: dict[str, Any] = {
    "date": "today",
    "machine": "here",
    "python": "3",
    "command": "pytest",
    "seconds": 1.0,
    "versions": {"synopsis": "dev"},
}
"""The run's description, as a report under test needs one."""


def cell(ms: float) -> dict[str, Any]:
    """A measured speed cell of ``ms`` milliseconds."""
    return {"median_ms": ms}


@pytest.fixture(scope="module")
def transcripts():
    return load_transcripts()


@pytest.mark.parametrize("size", [100, 1_000, 3_000])
def test_long_histories_are_valid_sessions_with_their_own_ids(transcripts, size):
    items = build_history(transcripts, size)
    assert size - 5 <= len(items) <= size
    assert leading_system(items) == 1
    assert [i["role"] for i in items[1:]].count("system") == 0
    assert synopsis.validate(items, provider="openai") == []
    # each copy renames its ids, so a call id is reused only as often as one transcript does
    ids = Counter(c["id"] for i in items for c in i.get("tool_calls") or ())
    base = Counter(
        c["id"] for t in transcripts.values() for i in t for c in i.get("tool_calls") or ()
    )
    assert max(ids.values()) <= max(base.values())


def test_cut_points_leave_out_invalid_recorded_prefixes(transcripts):
    small = {k: v for k, v in transcripts.items() if len(v) <= 30}
    points = validity.cut_points(small)
    total = sum(len(v) for v in small.values())
    assert 0 < len(points) <= total
    for _, prefix in points:
        assert problems(prefix, "openai") == []
    left_out = [
        t[:i]
        for t in small.values()
        for i in range(1, len(t) + 1)
        if problems(t[:i], "openai") or problems(t[:i], "anthropic")
    ]
    assert len(points) + len(left_out) == total


def test_judge_counts_a_result_without_its_call_as_a_400():
    orphan = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "gone", "content": "42"},
    ]
    found = problems(orphan, "openai")
    assert found
    assert rejected(found)
    tally = Tally()
    tally.judge(orphan, lambda items: (False, "orphan"))
    tally.judge([{"role": "user", "content": "hi"}], lambda items: (True, ""))
    tally.failed(ValueError("boom"))
    data = tally.as_json()
    assert data["outputs"] == 2
    assert data["raised"] == 1
    assert data["valid"] == {"openai": 1, "anthropic": 1}
    assert data["http_400"]["openai"] == 1
    assert data["tessera_pass"] == 1
    assert data["tessera_checked"] == 2
    assert data["errors"] == {"ValueError": 1}
    assert "openai" in data["example"]


def test_anchors_of_each_kind_and_only_those_the_summary_must_carry():
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You edit src/app/main.py carefully."},
        {"role": "user", "content": "Fix parse_config in src/app/config.py, ticket 40412."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "run", "arguments": '{"cmd": "pytest tests/test_x.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ValueError: bad port 70000\nok"},
        {"role": "assistant", "content": "Done with loadSettings."},
    ]
    found = anchors.extract(items)
    assert {"src/app/config.py", "tests/test_x.py", "src/app/main.py"} <= found["path"]
    assert {"parse_config", "loadSettings"} <= found["identifier"]
    assert "ValueError: bad port 70000" in found["error"]
    assert {"40412", "70000"} <= found["number"]
    assert any(r.startswith("Fix parse_config") for r in found["request"])

    # each message costs 10 tokens and 10 are kept: the last message is the tail
    every, salient = anchors.targets(items, 10, lambda item: 10)
    assert "src/app/main.py" not in every["path"]  # the system prompt keeps it anyway
    assert "loadSettings" not in every["identifier"]  # in the kept tail
    assert "70000" in every["number"]
    assert "70000" not in salient["number"]
    assert "40412" in salient["number"]

    summary = [{"role": "user", "content": "Earlier: parse_config in src/app/config.py"}]
    kept = anchors.retained(every, summary)
    assert kept["path"] == 1
    assert kept["identifier"] == 1
    assert kept["number"] == 0


def test_an_observation_in_a_user_turn_is_no_request_and_not_salient():
    items = [
        {"role": "user", "content": "Fix parse_config please."},
        {"role": "assistant", "content": "open src/app/config.py"},
        {"role": "user", "content": "[File: src/app/config.py] 1234: def load_settings():"},
        {"role": "assistant", "content": "done"},
    ]
    # each message costs 10 tokens and 10 are kept: the last message is the tail
    every, salient = anchors.targets(items, 10, lambda item: 10, observations_in_user_turns=True)
    assert every["request"] == {"Fix parse_config please."}
    assert "1234" in every["number"]
    assert "1234" not in salient["number"]
    assert "load_settings" not in salient["identifier"]
    _, as_people = anchors.targets(items, 10, lambda item: 10)
    assert "load_settings" in as_people["identifier"]


class _Overflowing(SynopsisSystem):
    """Keeps every message and adds a padded copy of them: over any window."""

    def step(self, history: Any, budget: Budget) -> Any | None:
        return [*history, {"role": "user", "content": "pad " * (2 * budget.window)}]


def test_an_output_over_the_window_retains_nothing(transcripts):
    small = {k: v for k, v in transcripts.items() if k.startswith("claudecode-cli")}
    results = retention.run([_Overflowing("rules")], small, lambda _: None)
    for block in results["ratios"].values():
        ours = block["systems"]["synopsis"]
        assert set(ours["over"]) == set(block["transcripts"]) == set(small)
        assert ours["overall"] == 0
        assert ours["salient"] == 0


def test_synopsis_system_compacts_valid_and_reports_through_the_harness(transcripts):
    system = SynopsisSystem()
    items = build_history(transcripts, 400)
    size = tokens(items)
    assert system.step(system.native(items), Budget(10 * size, size // 10, 20 * size)) is None
    out = system.step(system.native(items), Budget(size // 2, size // 10, size))
    assert out is not None
    assert tokens(out) < size // 2
    assert problems(out, "openai") == []
    assert any(fake_summary(0).split(" 0 ")[0] in str(m.get("content")) for m in out)

    small = {k: v for k, v in transcripts.items() if k.startswith(("aider", "claudecode-cov"))}
    points = validity.cut_points(small)
    results: dict[str, Any] = {
        "meta": META,
        "labels": {"synopsis": system.label},
        "validity": {
            "cut_points": len(points),
            "transcripts": len(small),
            "systems": validity.run([system], points, None, lambda _: None),
        },
        "replay": replay.run([system], transcripts, lambda _: None),
        "retention": retention.run([SynopsisSystem("rules")], transcripts, lambda _: None),
    }
    ours = results["validity"]["systems"]["synopsis"]
    assert ours["outputs"] == len(points)
    assert ours["raised"] == 0
    assert ours["valid"]["openai"] == len(points)
    played = results["replay"]["systems"]["synopsis"]
    assert played["compactions"] > 0
    assert played["invalid_requests"] == 0
    assert played["largest_request"] <= replay.WINDOW
    text = report.markdown(results)
    assert f"{len(points)} cut points" in text
    assert "| 100.0% | 100.0% | 0 | 0 | – |" in text  # valid, no 400s, tessera not run
    assert "5× |" in text
    assert "10× |" in text
    assert "of the person's requests (target 100%)" not in text  # no peer ran: no verdict
    json.dumps(results)


def test_speed_times_the_first_call_apart_from_the_warm_ones_and_the_report_reads_it(
    transcripts,
):
    items = build_history(transcripts, 100)
    assert speed.size_tokens(items) == tokens(items)  # the harness's own counter, same count
    decide = speed.measure("synopsis", 100, "decide")
    plan = speed.measure("synopsis", 100, "plan", tokens(items))
    assert decide["compacted"] == 0
    assert decide["calls"] == speed.CALLS["decide"] - 1
    assert plan["compacted"] == plan["calls"] + 1 == speed.CALLS["plan"]
    for cell in (decide, plan):
        assert cell["cold_ms"] > 0
        assert 0 < cell["min_ms"] <= cell["median_ms"]
        assert cell["peak_mib"] >= 0
        assert len(cell["load"]) == 2
    peer = {"median_ms": decide["median_ms"] * 20, "cold_ms": decide["cold_ms"] * 2}
    results: dict[str, Any] = {
        "labels": {"synopsis": "synopsis", "peer": "a peer"},
        "speed": {
            "sizes": [100],
            "systems": {
                "synopsis": {"decide": {"100": decide}, "plan": {"100": plan}},
                "peer": {"decide": {"100": peer}, "plan": {"100": {"timeout": 60.0}}},
            },
        },
    }
    rows = speed_report.speed_table(results, "decide")
    assert rows[-1].startswith("| a peer |")
    assert "(20.0×)" in rows[-1]
    assert "(2.0×)" in speed_report.speed_table(results, "decide", "cold_ms")[-1]
    assert "> 60 s" in speed_report.speed_table(results, "plan")[-1]
    assert speed_report.memory_table(results, "plan")[-1] == "| a peer | – |"
    # the verdicts are about 10k and 100k messages, which this run did not measure
    assert speed_report.decide_verdict(results) == ("not measured", None)
    assert speed_report.large_verdicts(results) == []
    assert speed_report.load_lines(results) == []  # the run said nothing of the machine


def test_an_unknown_system_is_refused_by_name():
    with pytest.raises(SystemExit, match="unknown system 'nope'"):
        registry.create("nope")


def test_the_anchor_verdict_wants_twice_the_best_peer_and_every_request():
    def row(label: str, salient: float, request: float | None) -> dict[str, Any]:
        return {"label": label, "salient": salient, "share": {"request": request}}

    results = {
        "retention": {
            "ratios": {
                "5": {
                    "systems": {
                        "synopsis": row("ours", 0.5, 1.0),
                        "a": row("peer a", 0.25, 0.0),
                        "b": row("peer b", 0.1, None),
                    }
                },
                "10": {"systems": {"synopsis": row("ours", 0.3, 0.9), "a": row("peer a", 0.2, 0)}},
            }
        }
    }
    lines = report.retention_verdicts(results)
    assert lines == [
        "- 5×: synopsis keeps 50.0% of the salient anchors; the best peer, peer a, 25.0% "
        "(target ≥ 2×): **met**",
        "- 5×: synopsis keeps 100% of the person's requests (target 100%): **met**",
        "- 10×: synopsis keeps 30.0% of the salient anchors; the best peer, peer a, 20.0% "
        "(target ≥ 2×): **not met**",
        "- 10×: synopsis keeps 90% of the person's requests (target 100%): **not met**",
    ]


def test_a_calls_arguments_are_read_as_the_model_wrote_them():
    call = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "write",
                    "arguments": json.dumps({"path": "a.md", "lines": ["\nProject setup"]}),
                },
            },
            {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "ls -la"}},
        ],
    }
    text = anchors.text_of(call)
    assert "nProject" not in anchors.extract([call])["identifier"]
    assert "path\na.md\nlines\n\nProject setup" in text
    assert "ls -la" in text


def test_no_path_is_counted_inside_a_run_longer_than_any_real_path():
    bundle = "".join(f"../m{i}/index.jssrc/part{i}.ts" for i in range(40))
    blob = "/" + "yOVV5u8FeUFsDyQG6fWI2TLTl2gMmq2d" * 6 + "/x.js"
    text = f"edit src/app/main.py then {bundle} and {blob}"
    assert anchors.paths(text) == {"src/app/main.py"}


def test_deciding_with_a_sqlite_store_is_measured_and_judged():
    found = speed.measure("synopsis+sqlite", 100, "decide")
    assert found["calls"] > 0
    assert found["compacted"] == 0
    assert registry.create("synopsis+sqlite").label.endswith(", SQLite store")

    results: dict[str, Any] = {
        "labels": {"synopsis": "synopsis"},
        "speed": {
            "sizes": [10_000, 100_000],
            "systems": {"synopsis": {"decide": {"10000": cell(0.5), "100000": cell(5.0)}}},
            "sqlite": {"10000": cell(0.75), "100000": cell(12.0)},
        },
    }
    lines = speed_report.sqlite_lines(results)
    assert "| synopsis Compactor, SQLite store | 0.75 ms (1.5×) | 12.00 ms (2.4×) |" in lines
    assert any("1.50× (target ≤ 2×: met)" in line for line in lines)
    assert any("2.40× (target ≤ 2×: NOT met)" in line for line in lines)
    del results["speed"]["sqlite"]
    assert speed_report.sqlite_lines(results) == []


def test_deciding_on_a_history_decoded_from_json_each_call_is_measured_and_judged():
    found = speed.measure("synopsis+fresh", 100, "decide")
    assert found["calls"] > 0
    assert found["compacted"] == 0
    system = registry.create("synopsis+fresh")
    assert system.label.endswith(", history decoded from JSON each call")
    items = [{"role": "user", "content": "hi"}]
    decoded = system.native(items)
    assert decoded == items
    assert decoded[0] is not items[0]

    fresh = {"1000": cell(0.5), "10000": cell(4.0)}
    results: dict[str, Any] = {
        "labels": {"synopsis": "synopsis", "langchain": "LangChain"},
        "speed": {
            "sizes": [1_000, 10_000],
            "systems": {
                "synopsis": {"decide": {"1000": cell(0.2), "10000": cell(0.4)}},
                "langchain": {"decide": {"1000": cell(10.0), "10000": cell(40.0)}},
            },
            "fresh": fresh,
        },
    }
    row = (
        "| synopsis Compactor, history decoded from JSON each call "
        "| 0.50 ms (20.0×) | 4.00 ms (10.0×) |"
    )
    target = "target: at least 5× faster than LangChain SummarizationMiddleware"
    lines = speed_report.fresh_lines(results)
    assert row in lines
    assert lines[-1].endswith(f"10.0× faster ({target}: met)")
    fresh["10000"] = cell(10.0)
    assert speed_report.fresh_lines(results)[-1].endswith(f"4.0× faster ({target}: NOT met)")
    # without LangChain's time there is nothing to judge against
    del results["speed"]["systems"]["langchain"]
    lines = speed_report.fresh_lines(results)
    assert (
        "| synopsis Compactor, history decoded from JSON each call | 0.50 ms | 10.00 ms |" in lines
    )
    assert "could not be judged" in lines[-1]
    assert lines[-1].endswith(f"({target})")
    del fresh["10000"]
    assert not speed_report.fresh_lines(results)[-1].startswith("- at")
    del results["speed"]["fresh"]
    assert speed_report.fresh_lines(results) == []


def test_deciding_on_a_whole_history_sent_again_after_a_compaction_is_measured_and_judged(
    transcripts,
):
    found = speed.measure("synopsis+resent", 100, "decide")
    assert found["calls"] > 0
    assert found["compacted"] == 1  # the first call's, forced
    assert found["first_ms"] > 0  # the one full read after the compaction, apart
    system = registry.create("synopsis+resent")
    assert isinstance(system, SynopsisSystem)
    assert system.label.endswith(", whole history resent after a compaction")
    items = build_history(transcripts, 100)
    size = tokens(items)
    budget = Budget(10 * size, size // 10, 20 * size)
    assert system.first_resent_ms is None
    assert system.step(system.native(items), budget) is not None  # the first call is forced
    assert system.first_resent_ms is not None  # and the same history sent once more
    resent = [*items, next_item(transcripts, 0)]
    assert system.step(system.native(resent), budget) is None
    compactor = system.compactor(budget)
    store = compactor.setup.store
    assert isinstance(store, synopsis.MemoryStore)
    assert len(store.summaries("bench")) == 1
    state = store.session("bench")
    assert state is not None
    assert state.projection
    # the summary stands in for the part it covers: what is measured and sent is small
    again = [*resent, next_item(transcripts, 1)]
    result = compactor.compact(again, format="openai")
    assert not result.compacted
    assert result.tokens_before < tokens(again) // 2
    assert len(result.messages) < len(again)
    assert any(fake_summary(0).split(" 0 ")[0] in str(m.get("content")) for m in result.messages)

    resent_cells = {"1000": cell(0.5), "10000": cell(1.0)}
    results: dict[str, Any] = {
        "labels": {"synopsis": "synopsis"},
        "speed": {
            "sizes": [1_000, 10_000],
            "systems": {"synopsis": {"decide": {"1000": cell(0.25), "10000": cell(0.5)}}},
            "resent": resent_cells,
        },
    }
    row = (
        "| synopsis Compactor, whole history resent after a compaction "
        "| 0.50 ms (2.0×) | 1.00 ms (2.0×) |"
    )
    lines = speed_report.resent_lines(results)
    assert row in lines
    assert lines[-1].endswith("2.00× (target: under 3× the appended-list path: met)")
    resent_cells["10000"] = cell(1.5)  # exactly three times is not under it
    lines = speed_report.resent_lines(results)
    assert lines[-1].endswith("3.00× (target: under 3× the appended-list path: NOT met)")
    resent_cells["10000"] = {"median_ms": 1.5, "first_ms": 480.0}
    lines = speed_report.resent_lines(results)
    assert lines[-1] == (
        "- the first request after the compaction, sent in the warm-up (not in the "
        "table): 10,000 messages 480 ms"
    )
    del resent_cells["10000"]
    assert not speed_report.resent_lines(results)[-1].startswith("- at")
    del results["speed"]["resent"]
    assert speed_report.resent_lines(results) == []


def test_the_report_shows_each_way_of_calling_synopsis_after_the_decide_verdict():
    decide = {"10000": cell(0.5)}
    results: dict[str, Any] = {
        "meta": META,
        "labels": {"synopsis": "synopsis", "langchain": "LangChain"},
        "speed": {
            "sizes": [10_000],
            "systems": {
                "synopsis": {"decide": decide, "plan": decide},
                "langchain": {"decide": {"10000": cell(50.0)}, "plan": {}},
            },
            "sqlite": {"10000": cell(0.75)},
            "resent": {"10000": cell(1.0)},
        },
    }
    text = report.markdown(results)
    sqlite = text.index("With a session in a SQLite file")
    resent = text.index("With a client that sends its whole uncompacted history")
    assert text.index("(target ≥ 10×: met).**") < sqlite < resent
    assert "(target ≤ 2×: met)\n\nWith a client" in text  # one blank line between tables
    assert "decoded from JSON" not in text  # not measured: no table
    results["speed"]["fresh"] = {"10000": cell(2.0)}
    text = report.markdown(results)
    assert sqlite < text.index("decoded from JSON on every call") < text.index("With a client")


def test_a_run_measures_the_ways_of_calling_synopsis_only_beside_synopsis(monkeypatch):
    # Each child process is replaced by its answer: the run's bookkeeping is what is tested,
    # and a real run takes an hour.
    asked: list[tuple[str, int, str]] = []

    def in_child(name: str, size: int, mode: str, tokens: int) -> dict[str, Any]:
        assert tokens == size  # what the parent counted, handed on
        asked.append((name, size, mode))
        return {"timeout": 60.0} if size == 1_000 else dict(timed)

    timed = {"cold_ms": 3.0, "median_ms": 1.5, "min_ms": 1.25, "peak_mib": 2.0, "load": [0.5, 1]}
    timed |= {"cold_cpu_ms": 2.5, "median_cpu_ms": 1.0}
    monkeypatch.setattr(speed, "in_child", in_child)
    monkeypatch.setattr(speed, "build_history", lambda _, size: [{}] * size)
    monkeypatch.setattr(speed, "size_tokens", len)
    shown: list[str] = []
    out = speed.run(["synopsis"], shown.append)
    assert out["systems"]["synopsis"]["decide"]["10000"] == {
        "skipped": "a smaller size ran out of time"
    }
    stopped = {"timeout": 60.0}
    shown_cell = (
        "first 3.00 ms, then 1.50 ms (best 1.25; CPU 2.50 and 1.00), peak 2.0 MiB, load 0.5 to 1.0"
    )
    for key, name, what in speed.VARIANTS:
        # a variant measures every size: one that runs out of time at 1k is no reason to stop
        assert out[key] == {"100": timed, "1000": stopped, "10000": timed, "100000": timed}
        assert [(n, m) for n, _, m in asked if n == name] == [(name, "decide")] * 4
        assert f"speed: synopsis {what} decide 100: {shown_cell}" in shown
        assert f'speed: synopsis {what} decide 1,000: {{"timeout": 60.0}}' in shown
    assert f"speed: synopsis with a SQLite store decide 100,000: {shown_cell}" in shown
    assert len(out["load"]) == 2
    asked.clear()
    out = speed.run(["langchain"], shown.append)
    assert not {"sqlite", "fresh", "resent"} & set(out)
    assert {name for name, _, _ in asked} == {"langchain"}


def test_one_compaction_is_judged_against_the_fastest_peer_that_finished():
    results: dict[str, Any] = {
        "labels": {"synopsis": "synopsis", "a": "peer a", "b": "peer b", "c": "peer c"},
        "speed": {
            "sizes": [10_000],
            "systems": {
                "synopsis": {"decide": {}, "plan": {"10000": cell(120.0)}},
                "a": {"decide": {}, "plan": {"10000": cell(150.0)}},
                "b": {"decide": {}, "plan": {"10000": cell(130.0)}},
                "c": {"decide": {}, "plan": {"10000": {"timeout": 60.0}}},
            },
        },
    }
    line = speed_report.plan_verdict(results)[0]
    assert "synopsis 120 ms, the fastest peer (peer b) 130 ms: 0.92× its time" in line
    assert line.endswith("(target: no slower: met)")
    results["speed"]["systems"]["synopsis"]["plan"]["10000"] = cell(131.0)
    assert speed_report.plan_verdict(results)[0].endswith("NOT met)")
    assert "no slower" in report.markdown({**results, "meta": META})
    results["speed"]["systems"]["synopsis"]["plan"] = {}
    assert speed_report.plan_verdict(results) == []


def test_the_replay_command_is_timed_on_a_file_and_judged_linear(transcripts, monkeypatch):
    found = scale.replay_once(build_history(transcripts, 300))
    assert found["messages"] == 300
    assert found["seconds"] > 0
    assert found["cpu_seconds"] > 0
    assert found["peak_mib"] > 10  # an interpreter with synopsis imported, at least
    assert len(found["load"]) == 2
    assert found["completed"] is True
    assert found["compactions"] >= 0
    assert 0 <= found["saved_share"] < 1
    monkeypatch.setattr(scale, "WINDOW", 50)  # the system prompt alone does not fit
    broken = scale.replay_once(build_history(transcripts, 50))
    assert broken["error"].startswith("exit 2")

    stopped = scale.replay_once(build_history(transcripts, 300), limit=0.01)
    assert stopped == {"messages": 300, "timeout": 0.01}

    def timed(seconds: float) -> dict[str, Any]:
        return {"seconds": seconds, "compactions": 10, "completed": True, "saved_share": 0.5}

    results: dict[str, Any] = {
        "scale": {
            "window": 32_000,
            "model": "gpt-4o",
            "sizes": {"10000": timed(40.0), "100000": timed(390.0)},
        }
    }
    assert scale.verdict(results) == (9.75, True)
    text = "\n".join(scale.lines(results))
    assert "| 100,000 | 390.0 s | – | 3.90 s | – | – | 10 | 50.0% |" in text  # an older run
    assert "9.8× the time of 10,000 (target: at most 10×, linear in the transcript: met)" in text
    measured = {"cpu_seconds": 35.0, "peak_mib": 120.0, "load": [0.5, 1.25]}
    results["scale"]["sizes"]["10000"] |= measured
    results["scale"]["sizes"]["100000"] |= measured | {"cpu_seconds": 350.0}
    text = "\n".join(scale.lines(results))
    assert "| 100,000 | 390.0 s | 350.0 s | 3.90 s | 120 MiB | 0.5 → 1.2 | 10 | 50.0% |" in text
    assert "9.8× the time of 10,000; 10.0× its CPU time (target" in text
    results["scale"]["sizes"]["100000"] = {"timeout": 3600.0}
    assert scale.verdict(results) == (None, None)
    assert "| 100,000 | > 3,600 s | | | | | | |" in "\n".join(scale.lines(results))
    assert "synopsis replay" in report.markdown({**results, "meta": META, "labels": {}})


def test_one_compaction_at_100k_is_judged_warm_and_cold_and_against_10k():
    def timed(warm: float, cold: float, peak: float, load: float = 0.5) -> dict[str, Any]:
        cpu = {"median_cpu_ms": warm * 0.9, "cold_cpu_ms": cold * 0.9}
        return {"median_ms": warm, "cold_ms": cold, "peak_mib": peak, "load": [load, load], **cpu}

    results: dict[str, Any] = {
        "meta": META,
        "labels": {"synopsis": "synopsis", "a": "peer a", "b": "peer b"},
        "speed": {
            "sizes": [10_000, 100_000],
            "calls": {"decide": 8, "plan": 6},
            "cores": 2,
            "load": [0.5, 3.0],
            "systems": {
                "synopsis": {
                    "decide": {},
                    "plan": {"10000": timed(100, 300, 5), "100000": timed(1000, 4000, 50, 2.5)},
                },
                "a": {"decide": {}, "plan": {"100000": timed(1500, 1600, 20)}},
                "b": {"decide": {}, "plan": {"100000": timed(1200, 2000, 30)}},
            },
        },
    }
    lines = speed_report.large_verdicts(results)
    assert lines[0] == (
        "- one compaction at 100,000 messages, warm (median): synopsis 1,000 ms (900 ms of CPU, "
        "peak 50 MiB); the fastest peer (peer b) 1,200 ms (1,080 ms of CPU, peak 30 MiB): 0.83× "
        "its time (target: no slower: met)"
    )
    assert (
        "first call: synopsis 4,000 ms (3,600 ms of CPU, peak 50 MiB); the fastest peer "
        in (lines[1])
    )
    assert lines[1].endswith(
        "(peer a) 1,600 ms (1,440 ms of CPU, peak 20 MiB): 2.50× its time (target: no slower: "
        "NOT met)"
    )
    assert lines[2].endswith(
        "warm (median): 100 ms to 1,000 ms, 10.0×; of CPU time, 10.0× (target: within 11×: met)"
    )
    assert lines[3].endswith(
        "first call: 300 ms to 4,000 ms, 13.3×; of CPU time, 13.3× (target: within 11×: NOT met)"
    )
    load = speed_report.load_lines(results)[0]
    assert "was 0.5 when this part began and 3.0 when it ended, on 2 cores" in load
    assert load.endswith(
        "1 of 4 cells began or ended above 2 (other processes wanting the cores: "
        "their times may be high): synopsis plan 100,000."
    )
    text = report.markdown(results)
    assert "Each cell: a process of its own, 6 calls" in text
    assert text.index("First call (cold):") < text.index("Peak memory of the calls")
    assert "| peer a | – | 20.0 MiB |" in text
    results["speed"]["systems"]["synopsis"]["plan"]["100000"]["load"] = [0.5, 1.0]
    assert speed_report.load_lines(results)[0].endswith("No cell began or ended above 2.")
    for name in ("synopsis", "a", "b"):
        for cell in results["speed"]["systems"][name]["plan"].values():
            cell["load"] = [2.5, 3.0]
    assert (
        "Every cell began or ended above 2 (other processes wanting the cores"
        in (speed_report.load_lines(results)[0])
    )
    cold = speed_report.speed_table(results, "plan", "cold_ms")
    assert "| peer a | – | 1,600 ms (0.4×) |" in cold
    results["speed"]["systems"]["a"]["plan"]["100000"]["cold_ms"] = 26.4
    assert "| peer a | – | 26.40 ms (0.0066×) |" in speed_report.speed_table(
        results, "plan", "cold_ms"
    )
    older = {"median_ms": 1000.0}  # a cell of a run that measured no CPU time nor memory
    results["speed"]["systems"]["a"]["plan"]["100000"] = older
    assert "(peer a) 1,000 ms: 1.00× its time" in speed_report.large_verdicts(results)[0]
