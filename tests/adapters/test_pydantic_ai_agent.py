"""pydantic-ai agents running for a hundred turns with a small window, offline: every
request the model receives is one Anthropic would accept and fits the window, compactions
happen, the run's own history stays whole and usable, and what was replaced can be
recalled. Also the example script, run as a user would.

A hundred turns compact nine times with the per-request capability and nineteen with the
persistent one, most of them on a history holding a summary already: what two hundred turns
did, at half the cost. The thresholds below are those two hundred turns had, per turn."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.providers.anthropic import AnthropicProvider

import synopsis
from synopsis import CompactionCompleted, Event, Message, Role, TextPart
from synopsis.adapters.pydantic_ai import (
    SynopsisCapability,
    SynopsisRequestCapability,
    to_message,
)
from synopsis.messages import content_hash, is_summary_text
from tests.adapters.test_pydantic_ai import run
from tests.unmeasured import unmeasured_environ

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
INSTRUCTIONS = "You are a coding agent. Keep the tests green."
WINDOW = 6000
TURNS = 100
_ANTHROPIC = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(api_key="offline"))


@pytest.fixture(autouse=True)
def event_loop_of_the_test() -> Iterator[None]:
    """A loop for ``Agent.run_sync``, closed after the test: run_sync keeps the thread's loop
    open, and a later test's ``asyncio.run`` would leave it to be collected unclosed."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def anthropic_problems(messages: list[pm.ModelMessage]) -> list[synopsis.Problem]:
    """What Anthropic would refuse in ``messages``, mapped to its wire the way pydantic-ai's
    Anthropic model maps a request."""
    system, wire = run(_ANTHROPIC._map_message(list(messages), ModelRequestParameters(), {}))
    return synopsis.validate(wire, "anthropic", format="anthropic", system=system or None)


@dataclass
class Script:
    """A model that answers each turn after one tool call (a long file write every fifth
    turn, else a test run whose output repeats), or at once on turns between
    ``tools_every``; it records every request it receives."""

    tools_every: int = 1
    requests: list[list[pm.ModelMessage]] = field(default_factory=list)
    turn: int = 0

    def __call__(self, messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        self.requests.append(list(messages))
        last = messages[-1]
        assert isinstance(last, pm.ModelRequest)
        n = len(self.requests)
        if not any(isinstance(p, pm.UserPromptPart) for p in last.parts):
            return pm.ModelResponse(parts=[pm.TextPart(f"Done with step {n}.")])
        self.turn += 1
        if self.turn % self.tools_every:
            return pm.ModelResponse(parts=[pm.TextPart(f"Nothing to run for {n}.")])
        if self.turn % 5 == 0:
            body = f"# module {n}\n" + "def f():\n    return 1\n" * 120
            call = pm.ToolCallPart("write_file", {"path": f"m{n}.py", "text": body}, f"w{n}")
            return pm.ModelResponse(parts=[pm.TextPart(f"Writing m{n}.py"), call])
        call = pm.ToolCallPart("bash", {"cmd": f"pytest -k t{n}"}, f"b{n}")
        thinking = pm.ThinkingPart(f"check test {n}", signature=f"sig{n}")
        return pm.ModelResponse(parts=[thinking, call], model_name="scripted")


def make_agent(capability: Any, script: Script) -> Agent[None, str]:
    agent = Agent(FunctionModel(script), capabilities=[capability], instructions=INSTRUCTIONS)

    @agent.tool_plain
    def write_file(path: str, text: str) -> str:
        return f"wrote {len(text)} characters to {path}"

    @agent.tool_plain
    def bash(cmd: str) -> str:
        return "collected 12 items\n" + "test_module.py::test_case PASSED\n" * 12

    return agent


def holds_summary(message: pm.ModelMessage) -> bool:
    """Whether ``message`` holds a summary (pydantic-ai merges it into the request before)."""
    return any(
        isinstance(p, pm.UserPromptPart) and is_summary_text(str(p.content)) for p in message.parts
    )


def fits(messages: list[pm.ModelMessage], compactor: synopsis.Compactor) -> bool:
    system = Message(Role.SYSTEM, (TextPart(INSTRUCTIONS),))
    converted = [system, *(to_message(m) for m in messages)]
    return compactor.setup.counter.count_messages(converted) <= compactor.setup.window


def run_turns(
    capability: Any,
    turns: int,
    script: Script | None = None,
) -> tuple[Script, list[pm.ModelMessage], list[Any]]:
    """``turns`` runs of one conversation, each continuing from the last one's messages:
    the script, the final history, and every message the runs made."""
    script = script or Script()
    agent = make_agent(capability, script)
    history: list[pm.ModelMessage] | None = None
    made: list[pm.ModelMessage] = []
    for turn in range(turns):
        result = agent.run_sync(f"Turn {turn}: port the next module.", message_history=history)
        made.extend(result.new_messages())
        history = result.all_messages()
        assert history[-len(result.new_messages()) :] == result.new_messages()
    assert history is not None
    return script, history, made


def check_requests(script: Script, compactor: synopsis.Compactor) -> None:
    for request in script.requests:
        assert anthropic_problems(request) == []
        assert fits(request, compactor)


def test_a_persistent_capability_runs_a_hundred_turns() -> None:
    events: list[Event] = []
    capability: SynopsisCapability[None] = SynopsisCapability(
        model="claude-sonnet-4-5",
        context_window=WINDOW,
        store="memory",
        listeners=[events.append],
    )
    script, history, made = run_turns(capability, TURNS)
    check_requests(script, capability.compactor)
    completed = [e for e in events if isinstance(e, CompactionCompleted)]
    assert len(completed) >= TURNS // 20
    # The run's history is the compacted one: short, opening with the task, holding the
    # summary, and every tool call answered; it round-trips through pydantic-ai's serializer.
    assert len(history) < 60
    # pydantic-ai merges the summary into the task's request when a run starts; synopsis cuts
    # them apart, and the task comes back as its own request, its part the very object.
    first = history[0]
    assert isinstance(first, pm.ModelRequest)
    assert first.parts[0] is made[0].parts[0]
    assert first.instructions == INSTRUCTIONS
    assert any(holds_summary(m) for m in history)
    calls = {p.tool_call_id for m in history for p in m.parts if isinstance(p, pm.ToolCallPart)}
    returns = {p.tool_call_id for m in history for p in m.parts if isinstance(p, pm.ToolReturnPart)}
    assert calls == returns
    blob = pm.ModelMessagesTypeAdapter.dump_json(history)
    assert pm.ModelMessagesTypeAdapter.validate_json(blob) == history
    # Every message that left the history (summarized, or shortened) can be recalled.
    session = history[-1].conversation_id
    assert session is not None
    recalled = capability.compactor.recall(session)
    stored = {s.sha256 for s in recalled}
    # (A message made and compacted in the same run is in no run's new_messages(): the
    # requests the model received hold every message there was.)
    seen = {id(m): m for m in [*made, *(m for r in script.requests for m in r)]}
    kept = {id(m) for m in history}
    gone = [m for k, m in seen.items() if k not in kept and not holds_summary(m)]
    assert len(gone) > 2.5 * TURNS
    stored_alone = [m for m in gone if content_hash(to_message(m)) in stored]
    assert len(stored_alone) > 0.9 * len(gone)
    # The rest were merged by pydantic-ai, when a run started, into the request holding the
    # summary before them: they are in the history still, or stored inside that request.
    live = {p for m in history for p in to_message(m).parts}
    for m in gone:
        message = to_message(m)
        assert (
            content_hash(message) in stored
            or live.issuperset(message.parts)
            or any(message.text in s.text for s in recalled)
        )


def test_a_per_request_capability_runs_a_hundred_turns() -> None:
    events: list[Event] = []
    capability: SynopsisRequestCapability[None] = SynopsisRequestCapability(
        model="claude-sonnet-4-5", context_window=WINDOW, listeners=[events.append]
    )
    script, history, made = run_turns(capability, TURNS, Script(tools_every=2))
    check_requests(script, capability.compactor)
    # The run's history is every message the runs made, untouched.
    assert len(history) == len(made) == TURNS // 2 * 4 + TURNS // 2 * 2
    assert all(a is b for a, b in zip(history, made, strict=True))
    completed = [e for e in events if isinstance(e, CompactionCompleted)]
    assert len(completed) >= TURNS // 20
    # One summary per compaction: between compactions the model gets the stored one again.
    summaries = {
        p.content
        for request in script.requests
        for m in request
        for p in m.parts
        if isinstance(p, pm.UserPromptPart) and is_summary_text(str(p.content))
    }
    assert len(summaries) <= len(completed)
    session = history[-1].conversation_id
    assert session is not None
    assert len(capability.compactor.recall(session)) > 1.5 * TURNS


def test_conversations_of_one_agent_are_compacted_apart() -> None:
    """One capability serves two conversations, told apart by pydantic-ai's conversation id."""
    capability: SynopsisCapability[None] = SynopsisCapability(context_window=WINDOW)
    script = Script()
    agent = make_agent(capability, script)
    histories: dict[str, list[pm.ModelMessage]] = {"a": [], "b": []}
    for turn in range(30):
        for name in ("a", "b"):
            result = agent.run_sync(
                f"{name} {turn}", message_history=histories[name], conversation_id=name
            )
            histories[name] = result.all_messages()
    for name, other in (("a", "b"), ("b", "a")):
        prompts = [
            p.content
            for m in histories[name]
            for p in m.parts
            if isinstance(p, pm.UserPromptPart) and not is_summary_text(str(p.content))
        ]
        assert all(str(p).startswith(name) for p in prompts)
        assert not any(str(p).startswith(other) for p in prompts)
        assert capability.compactor.recall(name)
    check_requests(script, capability.compactor)


def test_the_test_model_runs_through_the_capability() -> None:
    capability: SynopsisCapability[None] = SynopsisCapability(context_window=WINDOW)
    agent = Agent(TestModel(), capabilities=[capability])

    @agent.tool_plain
    def lookup(key: str) -> str:
        return f"value of {key} " * 120

    history: list[pm.ModelMessage] = []
    for turn in range(25):
        history = agent.run_sync(f"question {turn}", message_history=history).all_messages()
    assert capability.last_result is not None
    assert any(holds_summary(m) for m in history)
    assert anthropic_problems(history) == []


@pytest.mark.timeout(60)
def test_the_example_runs_offline() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "pydantic_ai_agent.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=unmeasured_environ(),
    )
    assert "compactions:" in done.stdout
    assert "recalled" in done.stdout
