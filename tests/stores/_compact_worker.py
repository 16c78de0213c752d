"""A process of its own that compacts one session of a PostgreSQL store, for the tests of
replicas sharing the database (``tests/stores/test_postgres_concurrency.py``).

Run as ``python -m tests.stores._compact_worker JOB`` from the repository's root, ``JOB`` a JSON
object:

- ``{"mode": "rounds", ...}``: ``threads`` threads, each with a store and a Compactor of its
  own, compact the histories ``conversation(turns=n)`` for each ``n`` of ``rounds``, all at
  once: the threads of this process meet at a barrier, and the processes at files in
  ``folder`` (one per process and round), before each round. The summarizer sleeps ``pause``
  seconds, so the calls of a round overlap. What happened is printed as one JSON object.
- ``{"mode": "hold", ...}``: one compaction of ``conversation(turns=turns)`` whose summarizer
  writes ``folder/holding`` and then sleeps until the process is killed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from synopsis import Compactor
from synopsis.stores import PostgresStore
from synopsis.testing import FixedCounter, ScriptedSummarizer, SummarizeCall, conversation

WINDOW = 3000
PER_MESSAGE = 100
"""The window the compactions fit, and what each message counts: ``conversation(turns=7)``
(29 messages, 2,900 tokens) is the first history that compacts."""


def compactor(store: PostgresStore, session: str, summarizer: ScriptedSummarizer) -> Compactor:
    """The Compactor every process and thread of a test uses, but for its summarizer."""
    return Compactor(
        store=store,
        session_id=session,
        counter=FixedCounter(per_message=PER_MESSAGE),
        summarizer=summarizer,
        context_window=WINDOW,
        environ={},
    )


def meet(folder: Path, name: str, processes: int, round_: int) -> None:
    """Wait until every process has come to ``round_`` (at most 30 s; none if one failed)."""
    (folder / f"{round_}-{name}").touch()
    deadline = time.monotonic() + 30
    while len(list(folder.glob(f"{round_}-*"))) < processes:
        if list(folder.glob("failed-*")):
            raise RuntimeError("another process failed")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other processes did not come to round {round_}")
        time.sleep(0.002)


def rounds(job: dict[str, Any]) -> dict[str, Any]:
    folder = Path(job["folder"])
    name: str = job["name"]
    threads: int = job["threads"]
    turns: list[int] = job["rounds"]
    calls: list[dict[str, Any]] = []
    results: list[list[dict[str, Any]]] = [[] for _ in turns]
    failures: list[str] = []
    met = [0]

    def together() -> None:
        meet(folder, name, job["processes"], met[0])
        met[0] += 1

    barrier = threading.Barrier(threads, action=together, timeout=60)

    def summarizing(thread: int) -> ScriptedSummarizer:
        def answer(call: SummarizeCall) -> str:
            began = time.time()
            time.sleep(job["pause"])
            calls.append({"thread": thread, "began": began, "ended": time.time()})
            # Who wrote it, in the text: a summary of its own per thread could not go unseen.
            return f"{name}/{thread} summarized {len(call.messages)} messages."

        return ScriptedSummarizer(default=answer)

    def work(thread: int) -> None:
        store = PostgresStore(job["url"])
        try:
            summarizer = summarizing(thread)
            with compactor(store, job["session"], summarizer) as compacting:
                for index, count in enumerate(turns):
                    history = conversation(turns=count)
                    barrier.wait()
                    began = time.time()
                    result = compacting.compact(history)
                    results[index].append(
                        {
                            "thread": thread,
                            "began": began,
                            "ended": time.time(),
                            "messages": result.messages,
                            "offloaded": list(result.offloaded),
                            "code": result.code,
                        }
                    )
        except Exception as error:
            failures.append(f"thread {thread}: {error!r}")
            (folder / f"failed-{name}").touch()
            barrier.abort()
        finally:
            store.close()

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {"name": name, "calls": calls, "results": results, "failures": failures}


def hold(job: dict[str, Any]) -> dict[str, Any]:
    folder = Path(job["folder"])

    def answer(_call: SummarizeCall) -> str:
        (folder / "holding").touch()
        time.sleep(600)
        return "never given"

    store = PostgresStore(job["url"])
    with compactor(store, job["session"], ScriptedSummarizer(default=answer)) as compacting:
        compacting.compact(conversation(turns=job["turns"]))
    store.close()
    return {}


def main() -> None:
    job = json.loads(sys.argv[1])
    done = rounds(job) if job["mode"] == "rounds" else hold(job)
    json.dump(done, sys.stdout)


if __name__ == "__main__":
    main()
