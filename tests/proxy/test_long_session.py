"""A long tool-using session through the proxy, as an agent runs one: the client keeps its
whole history and sends all of it on every request; the upstream asks for a tool, then
answers. On every request the upstream receives, the proxy must have sent a history the
provider accepts, inside the window, whose summarized start is byte for byte the one it sent
before until the next compaction; the summarizer runs once per compaction; and the client
never sees a summary.

A hundred turns make four hundred messages, with a compaction every four to six turns: each
property is checked through more than a dozen compactions, after which a session only repeats
what it did (a longer one costs more with every turn, each request resending the whole)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synopsis.formats import decode
from synopsis.messages import SUMMARY_TAG
from synopsis.planning.reductions import SUMMARY_MARKER
from synopsis.testing import ScriptedSummarizer
from synopsis.testing.server import Recorded, Reply, chat_completion
from synopsis.tokens import counter_for_model
from synopsis.validation import validate
from tests.proxy.sdk_clients import anthropic_client, holds_summary, openai_client

if TYPE_CHECKING:
    from synopsis.formats import FormatName
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy
    from tests.proxy.servers import Served

WINDOW = 5000
TURNS = 100
SYSTEM = "You are a coding agent. Read files with read_file before you answer."
OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
VERBS = ("parse", "load", "emit", "fold", "merge", "split", "check", "render")


def question(turn: int) -> str:
    return f"Turn {turn}: what does src/module_{turn}.py do, and is it safe to change?"


def file_text(turn: int) -> str:
    """What the tool reads at ``turn``: 4 to 40 lines of code, different every turn (from 60
    to 700 tokens)."""
    rng = random.Random(turn)
    lines = [f'"""Module {turn}: {rng.choice(VERBS)}s records."""']
    for n in range(rng.randint(3, 39)):
        verb, other = rng.choice(VERBS), rng.choice(VERBS)
        called = f"{other}_{rng.randint(0, 999)}"
        lines.append(f"def {verb}_{turn}_{n}(x): return {called}(x) * {rng.random():.4f}")
    return "\n".join(lines)


def answer_of(turn: int) -> str:
    return f"src/module_{turn}.py holds {len(file_text(turn).splitlines()) - 1} functions."


def turn_of(text: str) -> int:
    return int(text.removeprefix("Turn ").split(":")[0])


def chat_upstream(recorded: Recorded) -> Reply:
    """A model behind chat completions: a question gets a tool call, a tool's result the
    answer."""
    last = recorded.body["messages"][-1]
    if last["role"] == "user":
        turn = turn_of(last["content"])
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"{turn}"})},
        }
        body = chat_completion("")
        body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
        body["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(body)
    return Reply(chat_completion(answer_of(int(last["tool_call_id"].removeprefix("call_")))))


def messages_upstream(recorded: Recorded) -> Reply:
    """The same model behind Messages."""
    last = recorded.body["messages"][-1]
    content = last["content"]
    if isinstance(content, str):
        turn = turn_of(content)
        block = {"type": "tool_use", "id": f"toolu_{turn}", "name": "read_file"}
        blocks = [block | {"input": {"path": f"{turn}"}}]
        stop = "tool_use"
    else:
        turn = int(content[0]["tool_use_id"].removeprefix("toolu_"))
        blocks, stop = [{"type": "text", "text": answer_of(turn)}], "end_turn"
    return Reply(
        {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": recorded.body["model"],
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )


@dataclass
class Watch:
    """What the test checks on every request the upstream received."""

    format: FormatName
    model: str
    summarizer: ScriptedSummarizer
    tools: list[Any]
    requests: int = 0
    compactions: int = 0
    prefix: str | None = None
    unsummarized: int = 0
    """Requests sent as the client sent them, before the first compaction."""
    compared: int = 0
    """Requests whose summarized start was compared with the previous request's."""

    def check(
        self,
        recorded: Recorded,
        headers: Any,
        history: list[Any],
        calls_before: int,
    ) -> None:
        self.requests += 1
        compacted = headers["x-synopsis-compacted"] == "true"
        self.compactions += compacted
        # Exactly one summarizer call for each compaction, none otherwise.
        assert len(self.summarizer.calls) - calls_before == int(compacted)

        sent = recorded.body["messages"]
        system = recorded.body.get("system")
        assert recorded.body["model"] == self.model
        # Valid for the provider: a history ends with the user's turn or a tool's result.
        assert validate(sent, self.format, format=self.format, system=system) == []
        # Within the window, by synopsis's own count of what was sent.
        decoded = decode(sent, self.format, system=system).messages
        tokens = counter_for_model(self.model).count_messages(decoded, tools=self.tools)
        assert tokens == int(headers["x-synopsis-tokens"].split("/")[1]) <= WINDOW

        at = [i for i, item in enumerate(sent) if holds_summary(item)]
        if not at:
            self.unsummarized += 1
            assert not compacted
            assert sent == history
            return
        (summary,) = at
        # The start up to the summary is what the previous request had, byte for byte,
        # unless this one compacted again.
        prefix = json.dumps([system, sent[: summary + 1]])
        if self.prefix is not None and not compacted:
            assert prefix == self.prefix
            self.compared += 1
        if compacted:
            assert prefix != self.prefix
        self.prefix = prefix
        # After it, the client's newest items as the client sent them, but for a tool's output
        # the compaction made small to land the tail in its room (its original is stored).
        kept = sent[summary + 1 :]
        client = history[len(history) - len(kept) :]
        for item, given in zip(kept, client, strict=True):
            assert item == given or made_small(item, given), (item, given)
        assert len(kept) < len(history)


def made_small(item: Any, given: Any) -> bool:
    """Whether ``item`` is the client's ``given`` with its tool output digested."""
    if item.get("role") != given.get("role") or SUMMARY_MARKER not in json.dumps(item):
        return False
    if "tool_call_id" in given:  # OpenAI chat
        return bool(item.get("tool_call_id") == given["tool_call_id"])
    ids = [[b.get("tool_use_id") for b in m["content"]] for m in (item, given)]  # Anthropic
    return ids[0] == ids[1]


def test_a_long_chat_session_through_the_openai_sdk(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    upstream.default = chat_upstream
    summarizer = ScriptedSummarizer(default=lambda call: f"Read {len(call.messages)} messages.")
    served = proxy(context_window=WINDOW, summarizer=summarizer)
    watch = Watch("openai", "gpt-4o", summarizer, OPENAI_TOOLS)
    history: list[Any] = [{"role": "system", "content": SYSTEM}]
    with openai_client(served) as client:
        for turn in range(1, TURNS + 1):
            history.append({"role": "user", "content": question(turn)})
            while True:
                calls = len(summarizer.calls)
                # The history goes as extra_body: the SDK sends it as it is, where its typed
                # copy of hundreds of messages would take most of the test's time.
                raw = client.chat.completions.with_raw_response.create(
                    model="gpt-4o",
                    messages=[],
                    tools=OPENAI_TOOLS,
                    extra_body={"messages": history},
                )
                (recorded,) = upstream.requests
                upstream.requests.clear()
                watch.check(recorded, raw.headers, history, calls)
                message = raw.parse().choices[0].message
                assert SUMMARY_TAG not in raw.http_response.text
                history.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                call = message.tool_calls[0]
                history.append(
                    {"role": "tool", "tool_call_id": call.id, "content": file_text(turn)}
                )
            assert history[-1]["content"] == answer_of(turn)
    assert watch.requests == 2 * TURNS
    assert watch.unsummarized + watch.compactions + watch.compared == watch.requests
    assert watch.unsummarized < 20
    assert len(history) == 1 + TURNS * 4
    assert watch.compactions >= TURNS // 10
    assert watch.compactions == len(summarizer.calls) == compactions_counted(served, "chat")
    assert not [item for item in history if holds_summary(item)]


def test_a_long_messages_session_through_the_anthropic_sdk(
    upstream: FakeLLMServer, proxy: ServeProxy
) -> None:
    upstream.default = messages_upstream
    summarizer = ScriptedSummarizer(default=lambda call: f"Read {len(call.messages)} messages.")
    served = proxy(context_window=WINDOW, summarizer=summarizer)
    model = "claude-sonnet-4-6"
    watch = Watch("anthropic", model, summarizer, ANTHROPIC_TOOLS)
    history: list[Any] = []
    with anthropic_client(served) as client:
        for turn in range(1, TURNS + 1):
            history.append({"role": "user", "content": question(turn)})
            while True:
                calls = len(summarizer.calls)
                raw = client.messages.with_raw_response.create(
                    model=model,
                    max_tokens=256,
                    system=SYSTEM,
                    messages=[],
                    tools=ANTHROPIC_TOOLS,
                    extra_body={"messages": history},
                )
                (recorded,) = upstream.requests
                upstream.requests.clear()
                assert recorded.body["system"] == SYSTEM
                watch.check(recorded, raw.headers, history, calls)
                message = raw.parse()
                assert SUMMARY_TAG not in raw.http_response.text
                history.append({"role": "assistant", "content": message.model_dump()["content"]})
                use = next((b for b in message.content if b.type == "tool_use"), None)
                if use is None:
                    break
                result = {"type": "tool_result", "tool_use_id": use.id, "content": file_text(turn)}
                history.append({"role": "user", "content": [result]})
            assert history[-1]["content"][0]["text"] == answer_of(turn)
    assert watch.requests == 2 * TURNS
    assert watch.unsummarized + watch.compactions + watch.compared == watch.requests
    assert watch.unsummarized < 20
    assert len(history) == TURNS * 4
    assert watch.compactions >= TURNS // 10
    assert watch.compactions == len(summarizer.calls) == compactions_counted(served, "messages")
    assert not [item for item in history if holds_summary(item)]


def compactions_counted(served: Served, route: str) -> float:
    path = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}[route]
    found = served.state.metrics.registry.get_sample_value(
        "synopsis_proxy_compactions_total", {"route": path}
    )
    assert found is not None
    return float(found)
