"""LangChain's ContextEditingMiddleware as the comparison drives it, alone and stacked before
its SummarizationMiddleware: what the model is sent, what the agent's state keeps, and how the
replays carry each on. LangChain is in the development environment (the langchain adapter)
as well as in .venv-bench, so these run wherever it is installed."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware.context_editing")

from benchmarks.compare import registry
from benchmarks.compare import replay_retention as rr
from benchmarks.compare.judge import problems, tokens
from benchmarks.compare.peers import langchain_editing as editing
from benchmarks.compare.peers.langchain_mw import LangChainSummarization
from benchmarks.compare.systems import Budget, Items, fake_summary
from langchain_core.messages.utils import count_tokens_approximately

PLACEHOLDER = "[cleared]"


def _history(rounds: int, size: int = 400) -> Items:
    """A system prompt, a request, then ``rounds`` tool calls each answered by an output of
    ``size`` characters naming its own file."""
    items: Items = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Fix the parser. Never touch the lexer."},
    ]
    for n in range(rounds):
        arguments = json.dumps({"cmd": f"cat src/part{n}.py"})
        items.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "shell", "arguments": arguments},
                    }
                ],
            }
        )
        body = f"src/part{n}.py: " + "x" * size
        items.append({"role": "tool", "tool_call_id": f"call_{n}", "content": body})
    return items


def _tokens(system: Any, items: Items) -> int:
    """What the middleware counts: the messages after the system prompt, approximately."""
    return count_tokens_approximately(system.native(items)[1:])


def test_under_the_trigger_the_request_goes_out_as_it_is():
    system = editing.create()
    items = _history(6)
    budget = Budget(trigger=_tokens(system, items), keep=100, window=10_000)
    assert system.step(system.native(items), budget) is None


def test_over_it_every_tool_output_but_the_newest_three_is_cleared_in_the_request_only():
    system = editing.create()
    assert system.name == "langchain-clear"
    assert system.persists is False
    items = _history(6)
    history = system.native(items)
    budget = Budget(trigger=_tokens(system, items) - 1, keep=100, window=10_000)
    result = system.step(history, budget)
    assert result is not None
    sent = system.items(result)
    assert len(sent) == len(items)
    outputs = [i for i, item in enumerate(items) if item["role"] == "tool"]
    for i, (before, after) in enumerate(zip(items, sent, strict=True)):
        if i in outputs[:-3]:
            assert after == {**before, "content": PLACEHOLDER}
        else:
            assert after == before  # calls, ids, arguments and the system prompt as they were
    assert system.state(result) is None  # the state keeps every output
    assert system.items(editing.Edited(sent=history, state=None)) == items
    assert not problems(sent, "openai")
    assert not problems(sent, "anthropic")


def test_three_outputs_or_fewer_are_never_cleared():
    system = editing.create()
    items = _history(3)
    assert system.step(system.native(items), Budget(trigger=1, keep=1, window=10_000)) is None


def test_stacked_it_clears_until_the_history_passes_the_window_then_summarizes_the_state():
    system = editing.create_stacked()
    assert system.name == "langchain-clear+summarize"
    items = _history(12)
    size = _tokens(system, items)
    clearing = Budget(trigger=size // 2, keep=size // 4, window=size + 1)
    cleared = system.step(system.native(items), clearing)
    assert cleared is not None
    assert system.state(cleared) is None  # under the window: nothing summarized
    assert sum(m["content"] == PLACEHOLDER for m in system.items(cleared)) == 12 - 3
    full = Budget(trigger=size // 2, keep=size // 4, window=size - 1)
    result = system.step(system.native(items), full)
    assert result is not None
    state = system.state(result)
    # the state is what SummarizationMiddleware alone leaves with its trigger at the window
    alone = LangChainSummarization()
    at_window = Budget(trigger=full.window, keep=full.keep, window=full.window)
    expected = alone.step(alone.native(items), at_window)
    assert expected is not None
    assert state == alone.items(expected)
    assert state is not None
    assert len(state) < len(items)
    assert system.items(result) == state  # the summary left it under the clearing's trigger


def test_stacked_it_clears_what_the_summary_kept_when_that_is_still_over_the_trigger():
    system = editing.create_stacked()
    items = _history(12)
    size = _tokens(system, items)
    budget = Budget(trigger=size // 4, keep=size // 2, window=size - 1)
    result = system.step(system.native(items), budget)
    assert result is not None
    state, sent = system.state(result), system.items(result)
    assert state is not None
    assert len(sent) == len(state)
    assert any(m["content"] == PLACEHOLDER for m in sent)
    assert not any(m.get("content") == PLACEHOLDER for m in state)
    assert fake_summary(1).split()[0] in json.dumps(state)  # a summary is in the state


def test_the_registry_builds_both_with_their_own_factories():
    for name in ("langchain-clear", "langchain-clear+summarize"):
        assert name in registry.PEERS
        assert registry.create(name).name == name
        assert registry.create_non_llm(name).name == name
    assert registry.create("langchain").name == "langchain"


def _session(rounds: int) -> rr.Session:
    return rr.Session.of("s", [*_history(rounds), {"role": "assistant", "content": "Done."}])


def test_a_replay_clears_again_at_every_request_past_the_trigger():
    session = _session(8)
    system = editing.create()
    trigger = _tokens(system, session.items[:12])
    tally = rr.replay_session(system, session, Budget(trigger=trigger, keep=1, window=100_000))
    requests = [i for i, item in enumerate(session.items) if item["role"] == "assistant" and i]
    over = [i for i in requests if _tokens(system, session.items[:i]) > trigger]
    assert tally.requests_made == len(requests)
    assert tally.compactions == len(over)  # the state stays whole: cleared once per request
    assert tally.tokens_sent < sum(tokens(session.items[:i]) for i in requests)


def test_a_replay_carries_the_summarized_state_on_but_not_the_clearing():
    session = _session(12)
    system = editing.create_stacked()
    size = _tokens(system, session.items[:-1])
    budget = Budget(trigger=size // 4, keep=size // 3, window=size * 2 // 3)
    tally = rr.replay_session(system, session, budget)
    # a summary in the carried state: later requests are far smaller than the whole history
    assert tally.largest < tokens(session.items[:-1])
    assert tally.spent[0]["summarizer_calls"] >= 1
    assert tally.compactions > tally.spent[0]["summarizer_calls"]  # clearing in between
