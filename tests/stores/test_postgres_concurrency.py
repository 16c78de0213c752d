"""Compactions of one conversation in several processes and threads at once, each with a
PostgresStore of its own on one database: they take turns under the session's lock, the ones
that waited reuse the summary the first one made, and a lock whose holder gave up, was
cancelled or was killed is not left behind.

The processes are this test's own children (``tests/stores/_compact_worker.py``), started
from the repository's root without the machine's ``SYNOPSIS_*`` variables, and killed by
their process ids if they outlive a test.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from synopsis.errors import StoreError
from synopsis.stores import PostgresStore
from synopsis.testing import ScriptedSummarizer, SummarizeCall, conversation
from tests.stores._compact_worker import compactor

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synopsis import CompactionResult

ROOT = Path(__file__).resolve().parents[2]
SESSION = "s1"
ROUNDS = [7, 10, 13, 16, 19, 25]
"""The histories' turns, round by round: 7, 13, 19 and 25 compact (one summary each), the
others fit beside the summary the round before made."""
PAUSE = 0.5
"""How long a summary takes: long enough that every thread of a round is inside ``compact``
while the first one summarizes."""


# -- child processes -------------------------------------------------------------------------


def _start(job: dict[str, Any]) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stores._compact_worker", json.dumps(job)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _end(process: subprocess.Popen[bytes]) -> None:
    """The process killed by its id if it still runs, and waited for."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.communicate()


@contextmanager
def _children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The processes a test starts (it appends them); none outlives the block."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            _end(process)


def _output(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err.decode(errors="replace")
    done: dict[str, Any] = json.loads(out)
    return done


def _dumped(messages: object) -> str:
    return json.dumps(messages, ensure_ascii=False)


# -- many processes and threads on one session -----------------------------------------------


def test_processes_and_threads_on_one_session_summarize_each_prefix_once(
    postgres_url: str, tmp_path: Path
) -> None:
    processes, threads = 2, 4
    with _children() as started:
        for name in ("a", "b"):
            job = {
                "mode": "rounds",
                "url": postgres_url,
                "session": SESSION,
                "threads": threads,
                "rounds": ROUNDS,
                "folder": str(tmp_path),
                "name": name,
                "processes": processes,
                "pause": PAUSE,
            }
            started.append(_start(job))
        outputs = [_output(process, 50) for process in started]
    assert [o["failures"] for o in outputs] == [[]] * processes

    with PostgresStore(postgres_url) as store:
        state = store.session(SESSION)
        summaries = store.summaries(SESSION)
        assert state is not None
        calls = [call for o in outputs for call in o["calls"]]
        # One summary per compaction, whichever process or thread made it; four were needed.
        assert len(calls) == state.compactions == len(summaries) == 4
        assert len({r.id for r in summaries}) == len(summaries)
        assert state.summary_id == summaries[-1].id

        offloaded: list[str] = []
        for index, turns in enumerate(ROUNDS):
            history = conversation(turns=turns)
            results = [r for o in outputs for r in o["results"][index]]
            assert len(results) == processes * threads
            # Every thread of every process got the same history back, summary and all.
            first = _dumped(results[0]["messages"])
            assert all(_dumped(r["messages"]) == first for r in results)
            compacting = [r for r in results if r["offloaded"]]
            assert len(compacting) == (turns in (7, 13, 19, 25))
            for made in compacting:
                # Every thread was inside compact() while this one summarized: they overlapped.
                assert max(r["began"] for r in results) < made["ended"]
                offloaded += made["offloaded"]
            # What is no longer in the history is in the store, each original as it was sent.
            replaced = [item for item in history if item not in results[0]["messages"]]
            recalled = store.recall(SESSION, ids=offloaded)
            assert [json.loads(m.data) for m in recalled] == replaced
        # Nothing was offloaded twice, and nothing is stored that no compaction offloaded.
        kept = store.recall(SESSION)
        assert len(offloaded) == len(set(offloaded)) == len(kept)
        assert {m.id for m in kept} == set(offloaded)


# -- a lock held too long --------------------------------------------------------------------


class Blocking:
    """A summarizer that says when it starts, then waits to be let go."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.summarizer = ScriptedSummarizer(default=self._answer)

    def _answer(self, call: SummarizeCall) -> str:
        self.entered.set()
        assert self.release.wait(30)
        return f"The first {len(call.messages)} messages."


@contextmanager
def _compacting(url: str, history: list[dict[str, Any]]) -> Iterator[list[CompactionResult]]:
    """A compaction of ``history`` in a thread of its own, held in its summarizer for the
    block; its result once the block ends."""
    blocking = Blocking()
    results: list[CompactionResult] = []
    with PostgresStore(url) as store, compactor(store, SESSION, blocking.summarizer) as holder:
        worker = threading.Thread(target=lambda: results.append(holder.compact(history)))
        worker.start()
        try:
            assert blocking.entered.wait(10)
            yield results
        finally:
            blocking.release.set()
            worker.join(30)
    assert len(results) == 1


def test_a_compaction_that_waits_past_lock_timeout_fails_and_the_holder_finishes(
    postgres_url: str,
) -> None:
    history = conversation(turns=7)
    counting = ScriptedSummarizer()
    with PostgresStore(postgres_url, lock_timeout=0.3) as store:
        waiter = compactor(store, SESSION, counting)
        with _compacting(postgres_url, history) as held:
            began = time.monotonic()
            with pytest.raises(StoreError, match=r"waited 0\.3 s for a lock"):
                waiter.compact(history)
            assert 0.25 < time.monotonic() - began < 5
            began = time.monotonic()
            with pytest.raises(StoreError, match=r"waited 0\.3 s for session 's1'"):
                asyncio.run(waiter.acompact(history))
            assert 0.25 < time.monotonic() - began < 5
            assert store.session(SESSION) is None  # the waiters wrote nothing
        (result,) = held
        assert result.compacted
        assert counting.calls == []
        # The holder's compaction is whole: its summary, its originals, its state.
        state = store.session(SESSION)
        assert state is not None
        assert state.compactions == 1
        assert [r.id for r in store.summaries(SESSION)] == [state.summary_id]
        assert result.record is not None
        assert result.record.id == state.summary_id
        kept = store.recall(SESSION)
        assert [m.id for m in kept] == list(result.offloaded)
        assert in_order([json.loads(m.data) for m in kept], history[2:])
        # The lock is free again: the waiter now takes the holder's summary, asking for none.
        again = waiter.compact(history)
        assert _dumped(again.messages) == _dumped(result.messages)
        assert asyncio.run(waiter.acompact(history)).messages == again.messages
        assert counting.calls == []


def in_order(stored: list[Any], history: list[Any]) -> bool:
    """Whether ``stored`` are items of ``history``, each once, in the history's order: the
    originals a compaction offloaded (the ones it summarized, then any it kept made small)."""
    rest = iter(history)
    return all(any(item == given for given in rest) for item in stored)


def _advisory_locks(url: str) -> int:
    """Advisory locks granted in this test's database, whoever holds them."""
    with psycopg.connect(url) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_a_cancelled_async_compaction_leaves_no_lock_behind(postgres_url: str) -> None:
    history = conversation(turns=7)
    counting = ScriptedSummarizer()

    async def cancelled(waiter_store: PostgresStore) -> None:
        task = asyncio.create_task(compactor(waiter_store, SESSION, counting).acompact(history))
        await asyncio.sleep(0.3)  # a few attempts at the lock, all refused
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with PostgresStore(postgres_url, lock_timeout=30) as waiter_store:
        with _compacting(postgres_url, history) as held:
            asyncio.run(cancelled(waiter_store))
        assert _advisory_locks(postgres_url) == 0
        with PostgresStore(postgres_url, lock_timeout=0.5) as third:
            began = time.monotonic()
            with third.session_lock(SESSION):
                assert time.monotonic() - began < 0.5
        # The cancelled one's store works on: it takes the holder's summary.
        again = asyncio.run(compactor(waiter_store, SESSION, counting).acompact(history))
        assert _dumped(again.messages) == _dumped(held[0].messages)
    assert counting.calls == []


def test_a_waiter_cancelled_as_its_loop_ends_leaves_no_lock_behind(postgres_url: str) -> None:
    history = conversation(turns=7)
    # The waiter's one connection is busy with another session, so its attempt at the lock
    # waits for that connection in a thread, and is in flight when the task is cancelled.
    waiter_store = PostgresStore(postgres_url, pool_size=1, lock_timeout=30)
    busy, free = threading.Event(), threading.Event()

    def other_session() -> None:
        with waiter_store.session_lock("another"):
            busy.set()
            free.wait(30)

    elsewhere = threading.Thread(target=other_session)
    elsewhere.start()
    try:
        assert busy.wait(10)

        async def cancelled() -> None:
            waiter = compactor(waiter_store, SESSION, ScriptedSummarizer())
            task = asyncio.create_task(waiter.acompact(history))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The connection comes free, and the attempt takes the lock, as the loop closes.
            threading.Timer(0.3, free.set).start()

        asyncio.run(cancelled())  # which waits for the attempt to return
        elsewhere.join(30)
        deadline = time.monotonic() + 5
        while _advisory_locks(postgres_url) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _advisory_locks(postgres_url) == 0
        with PostgresStore(postgres_url, lock_timeout=0.5) as third, third.session_lock(SESSION):
            pass
    finally:
        free.set()
        elsewhere.join(30)
        waiter_store.close()


# -- a holder killed -----------------------------------------------------------------------


def test_a_process_killed_mid_compaction_leaves_the_session_as_it_was(
    postgres_url: str, tmp_path: Path
) -> None:
    with PostgresStore(postgres_url) as store:
        first = compactor(store, SESSION, ScriptedSummarizer("The first steps."))
        assert first.compact(conversation(turns=7)).compacted
        before = (store.session(SESSION), store.summaries(SESSION), store.recall(SESSION))

        with _children() as started:
            job = {
                "mode": "hold",
                "url": postgres_url,
                "session": SESSION,
                "turns": 13,
                "folder": str(tmp_path),
            }
            child = _start(job)
            started.append(child)
            deadline = time.monotonic() + 30
            while not (tmp_path / "holding").exists():
                assert child.poll() is None, child.communicate()[1].decode(errors="replace")
                assert time.monotonic() < deadline, "the child did not start summarizing"
                time.sleep(0.01)
            # It holds the session's lock, in the middle of its compaction.
            with (
                PostgresStore(postgres_url, lock_timeout=0.2) as prober,
                pytest.raises(StoreError, match="for a lock"),
                prober.session_lock(SESSION),
            ):
                pass  # pragma: no cover - never entered
            os.kill(child.pid, signal.SIGKILL)
            child.communicate(timeout=10)
            assert child.returncode == -signal.SIGKILL

        # Nothing of the killed compaction was written.
        assert (store.session(SESSION), store.summaries(SESSION), store.recall(SESSION)) == before
        # The next compaction of the session proceeds at once: PostgreSQL let the lock go with
        # the dead process's connection.
        counting = ScriptedSummarizer("The steps up to thirteen.")
        with PostgresStore(postgres_url, lock_timeout=5) as other:
            began = time.monotonic()
            result = compactor(other, SESSION, counting).compact(conversation(turns=13))
            assert time.monotonic() - began < 3
        assert result.compacted
        assert len(counting.calls) == 1
        state = store.session(SESSION)
        assert state is not None
        assert state.compactions == 2
        assert len(store.summaries(SESSION)) == 2
        stored = [json.loads(m.data) for m in store.recall(SESSION)]
        assert len(stored) > 20
        assert in_order(stored, conversation(turns=13)[2:])
