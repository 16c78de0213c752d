"""The proxy benchmark at a tiny size: every part measures what it claims (the servers
start and answer, the concurrent sessions are checked for mix-ups, the memory part sees the
sessions the proxy keeps) and the report shows it; no timing target is asserted here."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import zlib
from dataclasses import dataclass

import httpx2
import pytest
from benchmarks.compare.inputs import load_transcripts

from benchmarks import _recording
from benchmarks import bench_proxy as bench

# Three servers start in processes of their own (under coverage when the suite measures it),
# and the module's first test pays for the whole run in its fixture.
pytestmark = pytest.mark.timeout(180)

TINY = bench.Plan(
    latency=((20, 6), (200, 3)),
    first_byte=(20, 6),
    sessions=6,
    session_messages=20,
    session_rounds=2,
    pace=0.05,  # long enough for all six to be open at once on a busy machine
    memory=((20, 3), (200, 2)),
    breakdown=((20, 4), (200, 2)),
    yardstick_repeats=2,
    warmup=2,
    recording=(20, 6),
)


@dataclass
class Run:
    results: bench.Results
    printed: str
    written: str


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Run:
    path = tmp_path_factory.mktemp("bench") / "proxy.md"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = bench.main(TINY, path)
    return Run(results, out.getvalue(), path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def results(ran: Run) -> bench.Results:
    return ran.results


def test_each_path_is_timed_once_a_round_after_the_warm_up(results: bench.Results) -> None:
    rows = [*results.latencies, results.first_byte]
    assert [(r.messages, r.count) for r in rows] == [(20, 6), (200, 3), (20, 6)]
    for row in rows:
        assert set(row.samples) == {"direct", "relay", "proxy"}
        assert all(len(s) == row.count and min(s) > 0 for s in row.samples.values())
    small, large = results.latencies
    assert 0 < small.body_bytes < large.body_bytes
    # sessions of 20 messages take two more before a fresh one opens: the size holds
    assert len(small.sizes) == small.count
    assert max(small.sizes) < min(small.sizes) * 1.1
    assert len(small.first["proxy"]) == len(small.first["direct"]) == 3
    assert small.first_added(0.5) is not None
    assert large.first_added(0.5) is None  # its one session opened in the warm-up
    assert results.yardstick.messages == 200
    assert results.yardstick.orjson_ms > 0
    assert results.yardstick.json_ms > 0


def test_recording_is_timed_on_and_off_and_only_the_recording_proxies_write(
    results: bench.Results,
) -> None:
    found = results.recording
    assert set(found.latency.samples) == {"direct", *_recording.KINDS}
    assert found.latency.count == 6
    assert all(len(s) == 6 and min(s) > 0 for s in found.latency.samples.values())
    # every request reached the SQLite file of the proxy that records, none the other's
    assert found.written["recorded-sqlite"] >= 6 + TINY.warmup
    assert found.written["unrecorded-sqlite"] == found.written["control-sqlite"] == 0
    for _, on, off in _recording.STORES:
        assert len(found.blocks(on, off)) == 6  # fewer requests than blocks: one a block
        assert found.ratio(on, off, 0.5) > 0


def test_the_verdict_resolves_a_difference_only_when_every_block_shows_it() -> None:
    def recording(on: list[float]) -> _recording.Recording:
        off = [1.0] * len(on)
        samples = {"direct": off, "recorded": on, "unrecorded": off, "control-sqlite": on}
        return _recording.Recording(bench.Latency(100, samples=samples), {})

    mixed = recording([1.1, 0.9] * 10)
    assert "no difference resolved" in _recording.verdict(mixed, "memory", "recorded", "unrecorded")
    slower = recording([1.1] * 10 + [1.2] * 10)
    said = _recording.verdict(slower, "memory", "recorded", "unrecorded")
    assert said.startswith("memory: records on is slower in every block (1.100 to 1.200)")
    assert "by 150.000 ms a request" in said
    control = _recording.verdict(mixed, "c", "control-sqlite", "unrecorded")
    assert control.startswith("c: two proxies without records, 1.000 at p50")
    faster = recording([0.9] * 20)
    assert "faster in every block" in _recording.verdict(faster, "m", "recorded", "unrecorded")


def test_every_concurrent_session_gets_its_own_answers(results: bench.Results) -> None:
    crowd = results.concurrency
    assert (crowd.errors, crowd.mixups) == ([], [])
    assert crowd.streams == TINY.sessions * TINY.session_rounds
    assert crowd.peak_open == TINY.sessions
    met = {what: ok for what, _, ok in results.targets()}
    assert met["6 streaming sessions held at once, no error, no mix-up"]


def test_an_idle_session_keeps_more_the_longer_its_history(results: bench.Results) -> None:
    short, long = results.memories
    assert (short.sessions, long.sessions) == (3, 2)
    # the proxy keeps at least the session's history, decoded
    assert short.body_bytes < short.per_session < long.per_session
    assert long.per_session > long.body_bytes
    assert any(name.startswith("synopsis/") for name, _ in long.by_file)


def test_the_proxys_own_work_is_split_into_its_parts(results: bench.Results) -> None:
    small, large = results.breakdowns
    assert (small.messages, large.messages) == (20, 200)
    for part in results.breakdowns:
        assert part.parse_ms > 0
        assert part.compaction_ms > 0
        assert part.app_ms > part.parse_ms
    assert large.parse_ms > small.parse_ms


def test_the_proxys_own_work_is_a_target_beside_the_added_latency(
    results: bench.Results,
) -> None:
    rows = results.targets()
    whole, own = rows[0], rows[1]
    assert whole[0].startswith("added latency p50 at 20 messages")
    assert own[0].startswith("proxy's own work per request at 20 messages (in process")
    small = results.breakdowns[0]
    assert own[1].startswith(f"{small.app_ms:.2f} ms (of the ")
    assert f"{results.latencies[0].added(0.5) * 1e3:.2f} ms added end to end" in own[1]
    assert own[2] == (small.app_ms < bench.OWN_WORK_TARGET_MS)
    # without a breakdown at the smallest size there is nothing to show
    alone = dataclasses.replace(results, breakdowns=results.breakdowns[1:])
    assert [what for what, _, _ in alone.targets()] == [
        what for what, _, _ in rows if not what.startswith("proxy's own")
    ]


def test_a_profile_of_the_app_names_the_proxys_own_functions() -> None:
    found = bench.profile(load_transcripts(), 20, 3, 1)
    assert (found.messages, found.requests) == (20, 3)
    assert found.profiled_ms > 0
    own = [c.own_ms for c in found.costs]
    assert own == sorted(own, reverse=True)
    exchange = next(c for c in found.costs if c.name.endswith("(_exchange)"))
    assert exchange.name.startswith("synopsis/proxy/app.py:")
    assert exchange.total_ms > exchange.own_ms > 0
    # per request: a plain function called once a request counts 1 (a coroutine counts each
    # time it resumes, which depends on how often the proxy's code awaits)
    stable = next(c for c in found.costs if c.name.endswith("(stable)"))
    assert stable.name.startswith("synopsis/proxy/exchange.py:")
    assert stable.calls == 1.0
    files = dict(found.by_file())
    assert "synopsis/proxy/app.py" in files
    assert sum(files.values()) == pytest.approx(sum(own))
    lines = bench.profile_lines(found, top=4)
    assert lines[0].startswith("cProfile of the proxy's app in process at 20 messages, 3 ")
    assert len(lines) == 1 + 2 + 4 + 2 + 4
    # no path of the machine that ran it
    assert not any(c.name.startswith("/") for c in found.costs)


def test_the_run_prints_its_figures_and_writes_them_down(ran: Run) -> None:
    text = ran.written
    assert text.startswith("# The proxy's own cost\n")
    assert "python -m benchmarks.bench_proxy" in text
    assert len(re.findall(r"^\| (added|proxy's own work|6 streaming)", text, re.M)) == 5
    assert "| 200 messages | " in text
    assert "| 20 messages, first byte | " in text
    assert "\n| 200 | 2 | " in text
    assert "A session's first request at 20 messages" in text
    assert "## Recording's cost" in text
    assert re.search(r"^\| SQLite file \| 6 \| ", text, re.M)
    # where the time goes: a row per size, opening with the added milliseconds
    assert len(re.findall(r"^\| (20|200) messages \| [-0-9.]+ \| ", text, re.M)) == 2
    lines = ran.printed.splitlines()
    assert lines[0].startswith("server stack: uvicorn ")
    assert sum(line.startswith(("meets: ", "MISSES: ")) for line in lines) == 5
    assert lines[-1] == "written: proxy.md"


def test_an_answer_for_another_session_or_body_is_a_mixup() -> None:
    body = b'{"model":"m","messages":[]}'
    crc = f"crc={zlib.crc32(body):08x}"
    own = httpx2.Headers({"x-synopsis-session": "a", "x-synopsis-compacted": "false"})
    assert bench.mixup("a", "bench-mark-a-1", body, own, f"bench-mark-a-1 {crc}") is None
    other = httpx2.Headers({"x-synopsis-session": "b", "x-synopsis-compacted": "false"})
    assert "answered as session 'b'" in str(
        bench.mixup("a", "bench-mark-a-1", body, other, f"bench-mark-a-1 {crc}")
    )
    squeezed = httpx2.Headers({"x-synopsis-session": "a", "x-synopsis-compacted": "true"})
    assert "compacted='true'" in str(
        bench.mixup("a", "bench-mark-a-1", body, squeezed, f"bench-mark-a-1 {crc}")
    )
    assert "expected" in str(bench.mixup("a", "bench-mark-a-1", body, own, f"bench-mark-b-1 {crc}"))
    assert "expected" in str(
        bench.mixup("a", "bench-mark-a-1", body + b" ", own, f"bench-mark-a-1 {crc}")
    )


def test_a_source_file_is_named_from_its_package_on() -> None:
    assert bench._short("/x/y/src/synopsis/proxy/app.py") == "synopsis/proxy/app.py"
    assert bench._short("/v/lib/site-packages/starlette/requests.py") == "starlette/requests.py"
    assert bench._short("/somewhere/else.py") == "else.py"
