"""Two ``synopsis serve`` replicas, each a process of its own, sharing one PostgreSQL database,
in front of one upstream: one conversation sent to either, or to both at once, is compacted
as if one proxy served it, and a replica killed in the middle of a compaction leaves nothing
half written for the other.

The summaries come from an LLM summarizer, a second fake server, so every summary asked for
is counted. Its answer keeps the one phrase the conversation gives it to keep (the start of
the first request), so no answer is asked again.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai
import pytest

from synopsis import count_tokens
from synopsis.stores import PostgresStore
from synopsis.testing.server import FakeLLMServer, Recorded, Reply, chat_completion
from synopsis.validation import validate
from tests.cli.test_serve import Serving, serving
from tests.proxy.sdk_clients import answer, holds_summary

if TYPE_CHECKING:
    from collections.abc import Iterator

    from synopsis import SummaryRecord
    from synopsis.stores import SessionState, StoredMessage

SESSION = "replicated"
MODEL = "gpt-4o"
WINDOW = 1500
TURNS = 40
SUMMARY = {
    "narrative": "Tell me about the weather, part 0: the user asked about the weather in turns.",
    "sections": {"primary_request": ["Tell me about the weather, part 0."]},
}


def question(turn: int) -> dict[str, Any]:
    # Plain words only: nothing the summarizer would be asked to keep but the first request.
    words = "The sky was grey and the wind came from the sea over the hills. " * 4
    return {"role": "user", "content": f"Tell me about the weather, part {turn}. {words}"}


def reply(recorded: Recorded) -> Reply:
    """The upstream's answer: a different one each turn, so every message of the history is
    one of a kind."""
    if recorded.path != "/v1/chat/completions":
        return answer(recorded)
    asked = recorded.body["messages"][-1]["content"]
    return Reply(chat_completion(f"It rained, {asked.split('.')[0].lower()}."))


class Summarizer:
    """The summarizer's server: it answers ``SUMMARY``, after ``delay`` seconds."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.server = FakeLLMServer(default=self._answer)

    def _answer(self, _recorded: Recorded) -> Reply:
        return Reply(chat_completion(json.dumps(SUMMARY), model="gpt-4o-mini"), delay=self.delay)

    @property
    def calls(self) -> int:
        return len([r for r in self.server.requests if r.path == "/v1/chat/completions"])


class Replicas:
    """Two replicas of one proxy on one database; ``clients[i]`` speaks to replica ``i``."""

    def __init__(
        self, stack: ExitStack, upstream: FakeLLMServer, summarizer: Summarizer, url: str
    ) -> None:
        self.served: list[Serving] = []
        self.clients: list[openai.OpenAI] = []
        starting = [
            serving(
                "--upstream-openai", upstream.root, "--window", str(WINDOW),
                "--store", url, "--summarizer", "openai",
                "--base-url", summarizer.server.base_url,
                "--summarizer-model", "gpt-4o-mini", "--timeout", "30",
            )
            for _ in range(2)
        ]  # fmt: skip
        # Both start at once (each takes seconds, most of them its imports); each that
        # started is stopped at the end, even if the other did not start.
        with ThreadPoolExecutor(2) as pool:
            started = [pool.submit(replica.__enter__) for replica in starting]
        for replica, future in zip(starting, started, strict=True):
            if future.exception() is None:
                stack.push(replica.__exit__)
        for future in started:
            root, served = future.result()
            self.served.append(served)
            client = openai.OpenAI(
                api_key="sk-test",
                base_url=f"{root}/v1",
                max_retries=0,
                timeout=20,
                default_headers={"x-synopsis-session": SESSION},
            )
            stack.callback(client.close)
            self.clients.append(client)

    def send(self, replica: int, history: list[dict[str, Any]]) -> str:
        """The upstream's answer through ``replica``, which must not have failed open."""
        raw = self.served[replica].check(
            self.clients[replica].chat.completions.with_raw_response.create,
            model=MODEL,
            messages=history,
        )
        assert "x-synopsis-failed-open" not in raw.headers, self.served[replica].stderr
        content = raw.parse().choices[0].message.content
        assert content is not None
        return content

    def both(self, history: list[dict[str, Any]]) -> str:
        """The same request sent to both replicas at once; one of the answers."""
        answers: list[str] = []
        errors: list[BaseException] = []

        def send(replica: int) -> None:
            try:
                answers.append(self.send(replica, history))
            except BaseException as error:  # re-raised in the test's thread
                errors.append(error)

        threads = [threading.Thread(target=send, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        if errors:
            raise errors[0]
        assert len(answers) == 2
        return answers[0]


@dataclass(frozen=True)
class World:
    upstream: FakeLLMServer
    summarizer: Summarizer
    replicas: Replicas


@pytest.fixture
def world(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The upstream, the summarizer's server and two replicas, all stopped at the end."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-summarizer")  # the replicas' summarizer's key
    with ExitStack() as stack:
        upstream = stack.enter_context(FakeLLMServer(default=reply))
        summarizer = Summarizer()
        stack.enter_context(summarizer.server)
        yield World(upstream, summarizer, Replicas(stack, upstream, summarizer, postgres_url))


def _saved(url: str) -> tuple[SessionState | None, list[SummaryRecord], list[StoredMessage]]:
    with PostgresStore(url) as store:
        return store.session(SESSION), store.summaries(SESSION), store.recall(SESSION)


def _summary(messages: list[dict[str, Any]]) -> str:
    """The summary message of a forwarded history as JSON ("" when it has none)."""
    index = _summary_index(messages)
    return "" if index is None else json.dumps(messages[index])


def _summary_index(messages: list[dict[str, Any]]) -> int | None:
    found = [i for i, m in enumerate(messages) if holds_summary(m)]
    assert len(found) <= 1
    return found[0] if found else None


def test_one_conversation_through_two_replicas_is_compacted_as_by_one(
    world: World, postgres_url: str
) -> None:
    upstream, summarizer, replicas = world.upstream, world.summarizer, world.replicas
    summarizer.delay = 0.2  # so that the two requests of a turn sent at once overlap
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    sent: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    overlapped = 0
    for turn in range(TURNS):
        history.append(question(turn))
        sent[history[-1]["content"]] = list(history)
        before = len(upstream.requests)
        # Every other turn to both replicas at once, the others to each in turn.
        text = replicas.both(history) if turn % 2 else replicas.send(turn // 2 % 2, history)
        history.append({"role": "assistant", "content": text})
        new = {_summary(r.body["messages"]) for r in upstream.requests[before:]} - {""} - seen
        overlapped += bool(new) and turn % 2
        seen |= new
    # Some compactions were asked of both replicas at once.
    assert overlapped

    state, summaries, kept = _saved(postgres_url)
    assert state is not None
    received = [r for r in upstream.requests if r.path == "/v1/chat/completions"]
    assert len(received) == TURNS + TURNS // 2
    forwarded = [r.body["messages"] for r in received]
    # Several compactions, each its own summary, each asked of the summarizer once.
    distinct = {_summary(m) for m in forwarded} - {""}
    assert state.compactions >= 3
    assert summarizer.calls == state.compactions == len(summaries) == len(distinct)

    stored = [json.loads(m.data) for m in kept]
    assert len({m.id for m in kept}) == len(kept)
    assert all(stored.count(item) == 1 for item in stored)
    prefixes: dict[str, bytes] = {}
    for request, messages in zip(received, forwarded, strict=True):
        assert validate(messages, "openai") == []
        assert count_tokens(messages, MODEL) <= WINDOW
        index = _summary_index(messages)
        if index is None:
            assert messages == sent[messages[-1]["content"]]
            continue
        # Whichever replica forwarded it, the history up to and including the summary is the
        # same, byte for byte, until the next compaction.
        summary = json.dumps(messages[index]["content"], ensure_ascii=False).encode()
        end = request.raw.index(summary) + len(summary)
        assert prefixes.setdefault(summary.decode(), request.raw[:end]) == request.raw[:end]
        # Every message the client sent that was not forwarded is in the database as sent.
        client = sent[messages[-1]["content"]]
        replaced = [item for item in client if item not in messages]
        assert replaced
        assert all(item in stored for item in replaced)
    assert len(prefixes) == len(distinct)


def test_a_replica_killed_mid_compaction_leaves_nothing_half_written(
    world: World, postgres_url: str
) -> None:
    upstream, summarizer, replicas = world.upstream, world.summarizer, world.replicas
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    turn = 0

    def ask(replica: int) -> None:
        nonlocal turn
        history.append(question(turn))
        turn += 1
        history.append({"role": "assistant", "content": replicas.send(replica, history)})

    while summarizer.calls < 1:  # a first compaction, so the session has a state to keep
        ask(turn % 2)
    calls = summarizer.calls
    summarizer.delay = 30.0  # the next summary never comes while its replica lives
    failed: list[AssertionError] = []

    def until_killed() -> None:
        try:
            while True:
                ask(0)
        except AssertionError as error:  # Serving.check's, with what the replica wrote
            failed.append(error)

    driver = threading.Thread(target=until_killed)
    driver.start()
    try:
        summarizer.server.wait_for(calls + 1, timeout=20)
        before = _saved(postgres_url)
    finally:
        # Replica 0 is summarizing, under the session's lock: killed there.
        os.kill(replicas.served[0].process.pid, signal.SIGKILL)
        driver.join(30)
    assert replicas.served[0].process.wait(10) == -signal.SIGKILL
    assert len(failed) == 1
    assert isinstance(failed[0].__cause__, openai.APIConnectionError)
    assert summarizer.calls == calls + 1
    # Nothing of the killed replica's compaction was written, before its death or after.
    assert _saved(postgres_url) == before
    state = before[0]
    assert state is not None
    assert state.compactions == len(before[1]) == calls

    # The question replica 0 never answered goes to replica 1: at once, and compacted once.
    summarizer.delay = 0.0
    assert history[-1]["role"] == "user"
    began = time.monotonic()
    replicas.send(1, history)
    assert time.monotonic() - began < 5
    assert summarizer.calls == calls + 2
    after = _saved(postgres_url)
    state = after[0]
    assert state is not None
    assert state.compactions == len(after[1]) == calls + 1
    # What the killed replica was doing left no trace: the new records only add to the old.
    assert after[1][:-1] == before[1]
    assert after[2][: len(before[2])] == before[2]
    assert len({m.id for m in after[2]}) == len(after[2])
    forwarded = upstream.requests[-1].body["messages"]
    assert validate(forwarded, "openai") == []
    assert count_tokens(forwarded, MODEL) <= WINDOW
    stored = [json.loads(m.data) for m in after[2]]
    assert all(item in stored for item in history if item not in forwarded)
