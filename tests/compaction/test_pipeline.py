"""The pipeline's decisions and edges, each shown as a user would meet it."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

from synopsis import count_tokens
from synopsis.compaction import Compactor
from synopsis.errors import ConfigurationError, ConversationError
from synopsis.events import CompactionFailed, SummarizerFellBack
from synopsis.messages import Role
from synopsis.stores import MemoryStore
from synopsis.summarizers import RuleBasedSummarizer
from tests.compaction.helpers import TRANSCRIPTS, in_format, load_items

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord

AIDER = load_items(next(p for p in TRANSCRIPTS if p.stem == "aider-census"))


def chat(pairs: int, words: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(pairs):
        out += [
            {"role": "user", "content": f"question {i} " + "detail " * words},
            {"role": "assistant", "content": f"answer {i} " + "reason " * words},
        ]
    return out


def test_a_history_under_the_trigger_but_over_the_reserve_is_compacted():
    c = Compactor(
        model="gpt-4o",
        context_window=20_000,
        trigger=0.9,
        reset_ratio=0.6,
        reserve_output_tokens=5_000,
        environ={},
    )
    history = chat(40, 190)
    # Under 90% of 20k, over the 15k the reserve leaves.
    assert 15_000 < count_tokens(history, "gpt-4o") < 18_000
    result = c.compact(history)
    assert result.compacted
    assert result.code == "emergency"
    assert result.tokens_after <= 15_000


def test_reductions_are_kept_when_summarizing_would_save_too_little():
    huge = {"role": "tool", "tool_call_id": "c0", "content": "log line\n" * 12_000}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ],
    }
    history = [
        *chat(6, 5),
        {"role": "user", "content": "Run the build."},
        call,
        huge,
        {"role": "assistant", "content": "It failed."},
    ]
    c = Compactor(
        model="gpt-4o",
        context_window=40_000,
        reserve_output_tokens=1_000,  # over the trigger, but with room to answer
        min_savings=0.9,
        environ={},
    )
    result = c.compact(history)
    assert result.compacted
    assert result.tokens_after < 40_000 * 0.8
    assert result.record is None  # nothing was summarized; the log was made small
    assert any("Summary of tool output:" in str(m.get("content")) for m in result.messages)


class Failing:
    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, messages: Sequence[Message], **_: Any) -> SummaryRecord:
        self.calls += 1
        raise RuntimeError("down")


@pytest.mark.parametrize(
    "target_ratio",
    [
        pytest.param(None, id="default-target"),
        0.35,  # a target below reset_ratio
    ],
)
def test_the_breaker_opens_after_repeated_summarizer_failures(target_ratio: float | None):
    failing = Failing()
    options: dict[str, Any] = {} if target_ratio is None else {"target_ratio": target_ratio}
    c = Compactor(
        model="gpt-4o",
        context_window=4_000,
        trigger=0.5,
        reset_ratio=0.4,
        summarizer=failing,
        session_id="b",
        breaker_failures=2,
        cooldown_messages=0,
        environ={},
        **options,
    )
    results = []
    history = list(AIDER)
    for _ in range(6):
        result = c.compact(history)
        results.append(result)
        history = [*result.messages, *chat(6, 60)]
    codes = [r.code for r in results]
    # Two compactions, each falling back; then the breaker holds (a success or force closes it),
    # and the summarizer is not asked again.
    assert failing.calls == 2
    assert codes.count("triggered") == 2
    assert "breaker-open" in codes
    # A history that leaves no room for the answer is not returned over the window: the rules
    # compact it, and no fall-back is reported, since the summarizer was not asked.
    over = [r for r in results[codes.index("breaker-open") :] if r.code == "emergency"]
    assert over
    for result in over:
        assert result.compacted
        assert "the summarizer's breaker is open" in result.reason
        assert result.tokens_after <= c.setup.limit
        assert not any(isinstance(e, SummarizerFellBack) for e in result.events)


def test_a_forced_compaction_that_would_grow_the_history_does_nothing():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * 5
    result = Compactor(keep=2, environ={}).compact(history, force=True)
    assert not result.compacted
    assert result.code == "nothing-to-compact"
    assert result.messages == history


def test_failures_before_the_start_reach_the_listeners():
    heard: list[Any] = []
    with pytest.raises(ConversationError):
        Compactor(environ={}, listeners=[heard.append]).compact([{"role": "tool"}])
    assert [type(e) for e in heard] == [CompactionFailed]
    assert heard[0].stage == "open"


def test_the_format_setting_is_the_default_format():
    items = [{"role": "user", "content": "hi"}]
    result = Compactor(format="openai", environ={}).compact(items)
    assert result.format == "openai"
    with pytest.raises(ConversationError):
        Compactor(format="gemini", environ={}).compact(items)  # not Gemini's shape


def test_a_rules_budget_too_small_for_any_summary_is_refused_up_front():
    with pytest.raises(ConfigurationError, match="rules_max_summary_tokens"):
        Compactor(rules_max_summary_tokens=50, environ={})


def test_an_async_summarizer_works_from_blocking_code_inside_a_running_loop():
    class AsyncOnly:
        async def asummarize(self, messages: Sequence[Message], **options: Any) -> SummaryRecord:
            await asyncio.sleep(0)
            return RuleBasedSummarizer().summarize(messages, **options)

    c = Compactor(
        context_window=4_000, trigger=0.5, reset_ratio=0.4, summarizer=AsyncOnly(), environ={}
    )

    async def inside() -> Any:
        return c.compact(AIDER, force=True)  # blocking call from inside an event loop

    result = asyncio.run(inside())
    assert result.compacted
    assert not any(isinstance(e, SummarizerFellBack) for e in result.events)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"force": "yes"}, "force must be true or false"),
        ({"instructions": 5}, "instructions must be text"),
        ({"listeners": 5}, "listeners must be a list"),
    ],
)
def test_bad_call_arguments_are_refused_with_a_sentence(call: dict[str, Any], message: str):
    with pytest.raises(ConfigurationError, match=message):
        Compactor(environ={}).compact(AIDER, **call)


def test_an_async_only_store_asks_for_acompact():
    class AsyncOnlyStore:
        def __init__(self) -> None:
            self.inner = MemoryStore()

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("a"):
                raise AttributeError(name)
            return getattr(self.inner, name)

    store = AsyncOnlyStore()
    for method in (
        "asave",
        "asession",
        "asave_session",
        "asummaries",
        "arecall",
        "asearch",
        "asessions",
        "aclose",
    ):
        setattr(store, method, getattr(store.inner, method))
    c = Compactor(store=store, session_id="a", environ={})
    with pytest.raises(ConfigurationError, match="use acompact"):
        c.compact(AIDER)
    result = asyncio.run(c.acompact(AIDER, force=True))
    assert result.compacted
    assert store.inner.recall("a")


def test_a_system_summary_for_openai_is_a_system_message():
    result = Compactor(summary_role="system", environ={}).compact(AIDER, force=True)
    summary = next(m for m in result.messages if "<synopsis-summary" in str(m["content"]))
    assert summary["role"] == Role.SYSTEM.value


def test_a_repaired_message_is_stored_as_the_caller_sent_it():
    items, system = in_format(AIDER, "anthropic")
    items = copy.deepcopy(items)
    target = next(i for i, m in enumerate(items) if m["role"] == "assistant")
    blocks = items[target]["content"]
    items[target]["content"] = [
        *(blocks if isinstance(blocks, list) else [{"type": "text", "text": blocks}]),
        {"type": "text", "text": ""},  # a blank block Anthropic refuses; repair drops it
    ]
    store = MemoryStore()
    c = Compactor(model="gpt-4o", store=store, session_id="r", environ={})
    result = c.compact(items, system=system, format="anthropic", force=True)
    assert result.fixes
    recalled = [json.loads(m.data) for m in store.recall("r")]
    assert items[target] in recalled  # the caller's own item, blank block and all


def test_another_conversation_in_the_same_session_starts_its_own_summary():
    store = MemoryStore()
    c = Compactor(model="gpt-4o", store=store, session_id="s", environ={})
    first = c.compact(AIDER, force=True)
    assert first.record is not None
    # Long enough that a summary quoting every request still saves something.
    other = c.compact(chat(20, 80), force=True)
    assert other.compacted
    assert other.record is not None
    assert other.record.depth == 0  # nothing of the first conversation is in this one


def test_the_savings_check_gives_way_when_the_answer_has_no_room():
    huge = {"role": "tool", "tool_call_id": "c0", "content": "log line\n" * 12_000}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ],
    }
    history = [*chat(6, 5), {"role": "user", "content": "Run it."}, call, huge]
    c = Compactor(model="gpt-4o", context_window=40_000, min_savings=0.99, environ={})
    result = c.compact(history)
    assert result.compacted
    assert result.tokens_after <= 40_000 - c.setup.reserve


def test_too_little_to_save_with_room_to_answer_is_skipped():
    c = Compactor(
        model="gpt-4o",
        context_window=20_000,
        reserve_output_tokens=1_000,
        min_savings=0.99,
        environ={},
    )
    history = chat(44, 190)  # 17.3k: over the trigger (16k), with room left to answer (19k)
    result = c.compact(history)
    assert not result.compacted
    assert result.code == "too-little-savings"
    assert result.messages == history


def test_a_shorter_conversation_than_the_chain_covers_starts_its_own_summary():
    store = MemoryStore()
    c = Compactor(model="gpt-4o", store=store, session_id="s", environ={})
    first = c.compact(chat(40, 80), force=True)
    assert first.record is not None
    assert len(first.record.covers) > 12
    # Fewer messages to summarize than the chain covers: no prefix of it can be this one.
    other = c.compact(chat(6, 400), force=True)
    assert other.compacted
    assert other.record is not None
    assert other.record.depth == 0
