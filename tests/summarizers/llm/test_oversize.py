"""LLMSummarizer with input over its cap: chunks and consolidation, trimming, clipping, the
record's own budget, and cache-aligned requests. Scripted completions that answer from what
they were asked; no SDK, no network."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from synopsis.errors import ConfigurationError
from synopsis.messages import Message, Role, TextPart, message_id
from synopsis.summarizers import ActionItem, Entities, Facets, Sections, SummaryRecord, Usage
from synopsis.summarizers.llm.answers import joined
from synopsis.summarizers.llm.completion import Completion, CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.prompts import SYSTEM_PROMPT
from synopsis.summarizers.llm.summarizer import LLMSummarizer
from synopsis.summarizers.records import MAX_SECTION_ITEMS
from synopsis.testing import ScriptedCompletion
from synopsis.tokens import counter_for_model
from tests.summarizers.helpers import call, result, say, user

CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
COUNT = counter_for_model("gpt-4o").count_text
ONE = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12, cached_tokens=1)


def numbered_summaries(extra: dict[str, Any] | None = None) -> ScriptedCompletion:
    """A completion that answers every request with a short valid summary naming the
    request's number (and ``extra``'s fields)."""
    completion = ScriptedCompletion()
    completion.default = lambda request: numbered(completion, extra or {})
    return completion


def numbered(completion: ScriptedCompletion, extra: dict[str, Any]) -> CompletionResponse:
    content = {"narrative": f"summary {len(completion.requests)}", **extra}
    return CompletionResponse(json.dumps(content), usage=ONE)


def kinds_of(completion: ScriptedCompletion) -> list[str]:
    return [
        "merge" if "<partial_summaries>" in r.messages[-1]["content"] else "chunk"
        for r in completion.requests
    ]


def prompt_tokens(request: CompletionRequest) -> int:
    return COUNT(request.system) + sum(COUNT(m["content"]) for m in request.messages)


def long_session(turns: int, size: int = 120) -> list[Message]:
    messages = [user("Port the scheduler in sched/core.py to asyncio, keep the public API.")]
    for i in range(turns):
        body = f"line {i} of sched/core.py: def step_{i}(queue): return queue.pop({i})\n" * size
        messages += [
            call(f"call_{i}", "read_file", {"path": f"sched/part_{i}.py"}),
            result(f"call_{i}", body[: size * 20]),
            say(f"Read part {i}; step_{i} pops from the queue."),
        ]
    return messages


def make(responder: Completion, **options: Any) -> LLMSummarizer:
    options.setdefault("models", ["gpt-4o"])
    options.setdefault("quality_guard", False)
    return LLMSummarizer(responder, clock=lambda: CLOCK, **options)


# -- under the cap: one request ---------------------------------------------------------


def test_input_under_the_cap_is_one_request():
    responder = numbered_summaries()
    record = make(responder, max_input_tokens=50_000).summarize(long_session(3))
    assert kinds_of(responder) == ["chunk"]
    assert record.narrative == "summary 1"


def test_the_default_cap_is_the_smallest_window_less_the_summary():
    summarizer = LLMSummarizer(
        numbered_summaries(), models=["gpt-4o", "gpt-4"], max_summary_tokens=1000
    )
    assert summarizer.max_input_tokens == 8192 - 1000


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"oversize": "drop"}, "oversize must be 'chunk' or 'trim'"),
        ({"max_input_tokens": 0}, "max_input_tokens"),
        ({"max_depth": 0}, "max_depth"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str):
    with pytest.raises(ConfigurationError, match=message):
        make(numbered_summaries(), **options)


# -- chunks and consolidation -----------------------------------------------------------


def test_oversized_input_is_chunked_then_consolidated_within_the_cap():
    responder = numbered_summaries()
    messages = long_session(12)
    cap = 3000
    record = make(responder, max_input_tokens=cap).summarize(messages)
    kinds = kinds_of(responder)
    assert kinds.count("chunk") >= 3
    assert kinds[-1] == "merge"
    assert all(prompt_tokens(r) <= cap for r in responder.requests)
    # Chunks are consecutive and in order: every message is quoted in exactly one chunk.
    quoted = [
        int(line.split("]")[0][1:])
        for r in responder.requests
        if "<transcript>" in r.messages[-1]["content"]
        for line in r.messages[-1]["content"].splitlines()
        if line.startswith("[") and "]" in line and line.split("]")[0][1:].isdigit()
    ]
    assert quoted == list(range(1, len(messages) + 1))
    # The record covers the whole input, with the ids the whole history gives.
    assert [c.id for c in record.covers] == [message_id(m, i) for i, m in enumerate(messages)]
    assert record.narrative == f"summary {len(responder.requests)}"
    assert record.usage.total_tokens == ONE.total_tokens * len(responder.requests)
    assert record.usage.cached_tokens == len(responder.requests)


def test_consolidation_revises_the_previous_summary():
    previous = SummaryRecord(narrative="earlier work on sched/legacy.py")
    responder = numbered_summaries()
    record = make(responder, max_input_tokens=3000).summarize(long_session(12), previous=previous)
    merges = [r for r in responder.requests if "<partial_summaries>" in r.messages[-1]["content"]]
    assert len(merges) == 1
    assert "sched/legacy.py" in merges[0].messages[-1]["content"]
    chunks = [r for r in responder.requests if r not in merges]
    assert all("sched/legacy.py" not in r.messages[-1]["content"] for r in chunks)
    assert (record.depth, record.parent_id) == (1, previous.id)


def _padded(extra_words: int) -> dict[str, Any]:
    return {"key_points": [f"point {i}: " + "detail " * extra_words for i in range(20)]}


def test_partials_too_big_together_are_merged_in_rounds():
    responder = numbered_summaries(_padded(8))
    cap = 2000
    make(responder, max_input_tokens=cap, max_summary_tokens=4000).summarize(long_session(30))
    kinds = kinds_of(responder)
    assert kinds.count("merge") >= 2  # at least one intermediate round before the last
    assert all(prompt_tokens(r) <= cap for r in responder.requests)


def test_past_the_depth_cap_the_partials_are_truncated(caplog: pytest.LogCaptureFixture):
    responder = numbered_summaries(_padded(8))
    cap = 2000
    summarizer = make(responder, max_input_tokens=cap, max_summary_tokens=4000, max_depth=1)
    with caplog.at_level(logging.WARNING, "synopsis.summarizers"):
        summarizer.summarize(long_session(30))
    assert kinds_of(responder).count("merge") == 1
    last = responder.requests[-1].messages[-1]["content"]
    assert "characters cut to fit the summarizer's input" in last
    assert prompt_tokens(responder.requests[-1]) <= cap
    assert "truncated" in caplog.text


def test_a_chunk_answered_with_no_summary_is_summarized_by_the_rules(
    caplog: pytest.LogCaptureFixture,
):
    responder = numbered_summaries()
    # The first answer as usual, the second not JSON, the rest as usual.
    responder.answers = [lambda request: numbered(responder, {}), "not json"]
    messages = long_session(12)
    with caplog.at_level(logging.WARNING, "synopsis.summarizers"):
        record = make(responder, max_input_tokens=3000).summarize(messages)
    assert record.model == "gpt-4o"
    assert len(record.covers) == len(messages)
    merge = next(
        r for r in responder.requests if "<partial_summaries>" in r.messages[-1]["content"]
    )
    partials = merge.messages[-1]["content"]
    assert '"narrative": "summary 1"' in partials
    assert "Earlier: " in partials  # the rules' narrative of the second chunk
    assert "the rules summarize that part" in caplog.text


def test_a_chunk_that_failed_in_transport_falls_back_for_the_whole_input():
    responder = numbered_summaries()
    responder.answers = [lambda request: numbered(responder, {}), TimeoutError()]
    record = make(responder, max_input_tokens=3000, max_retries=0).summarize(long_session(12))
    assert record.model == "rules"
    assert kinds_of(responder).count("merge") == 0


def test_when_no_chunk_is_summarized_by_the_model_the_rules_summarize_the_whole():
    responder = ScriptedCompletion(default="not json")
    record = make(responder, max_input_tokens=3000).summarize(long_session(12))
    assert record.model == "rules"
    assert kinds_of(responder).count("merge") == 0


def test_a_message_larger_than_the_cap_is_clipped_head_and_tail():
    huge = "BEGIN " + "filler text " * 6000 + " END"
    messages = [user("Summarize the log."), call("c1", "cat", {"path": "big.log"})]
    messages.append(result("c1", huge))
    responder = numbered_summaries()
    make(responder, max_input_tokens=2000, result_chars=len(huge)).summarize(messages)
    assert all(prompt_tokens(r) <= 2000 for r in responder.requests)
    quoted = "\n".join(r.messages[-1]["content"] for r in responder.requests)
    assert "BEGIN" in quoted
    assert "END" in quoted
    assert "characters cut to fit the summarizer's input" in quoted


def test_sync_and_async_chunk_the_same_way():
    messages = long_session(12)
    sync = numbered_summaries()
    first = make(sync, max_input_tokens=3000).summarize(messages)

    async_responder = numbered_summaries()
    summarizer = LLMSummarizer(
        async_responder.acall, models=["gpt-4o"], quality_guard=False, clock=lambda: CLOCK
    )
    summarizer.max_input_tokens = 3000
    second = asyncio.run(summarizer.asummarize(messages))
    assert [r.messages for r in sync.requests] == [r.messages for r in async_responder.requests]
    assert first.model_dump(exclude={"id"}) == second.model_dump(exclude={"id"})


# -- trimming the oldest ----------------------------------------------------------------


def test_trim_keeps_the_first_request_and_the_newest_messages():
    responder = numbered_summaries()
    messages = long_session(12)
    make(responder, max_input_tokens=3000, oversize="trim").summarize(messages)
    assert len(responder.requests) == 1
    (request,) = responder.requests
    assert prompt_tokens(request) <= 3000
    content = request.messages[-1]["content"]
    assert "Port the scheduler in sched/core.py" in content
    assert "Read part 11; step_11 pops from the queue." in content
    assert "omitted: over the summarizer's input cap" in content
    assert "sched/part_0.py" not in content


# -- the record's own budget ------------------------------------------------------------


def test_a_summary_over_max_tokens_is_cut_to_fit_and_marked():
    responder = numbered_summaries(_padded(40))
    summarizer = make(responder, max_summary_tokens=300)
    record = summarizer.summarize(long_session(3))
    assert summarizer.measure(record) <= 300
    assert record.truncated
    assert record.narrative == "summary 1"
    assert 0 < len(record.key_points) < 20


def test_a_call_max_tokens_lowers_the_budget():
    responder = numbered_summaries(_padded(10))
    summarizer = make(responder, max_summary_tokens=4000)
    record = summarizer.summarize(long_session(3), max_tokens=200)
    assert summarizer.measure(record) <= 200
    assert responder.requests[0].max_tokens == 200


# -- cache-aligned requests -------------------------------------------------------------

TOOLS = ({"type": "function", "function": {"name": "read_file", "parameters": {}}},)


def conversation() -> list[Message]:
    return [Message(Role.SYSTEM, (TextPart("You are a coding agent."),)), *long_session(2, 5)]


def test_cache_aligned_sends_the_conversation_unchanged_with_a_final_instruction():
    responder = numbered_summaries()
    messages = conversation()
    summarizer = make(responder, cache_aligned=True, tools=TOOLS, max_input_tokens=50_000)
    record = summarizer.summarize(messages, instructions="keep the API names")
    (request,) = responder.requests
    assert request.conversation == tuple(messages)
    assert request.tools == TOOLS
    assert request.system == ""
    assert request.json_schema is None
    assert len(request.messages) == 1
    instruction = request.messages[0]["content"]
    assert "summarize the whole conversation above" in instruction
    assert "keep the API names" in instruction
    assert '"narrative"' in instruction
    assert len(record.covers) == len(messages)


def test_a_cache_aligned_summary_missing_facts_is_filled_in_without_a_second_call():
    completion = ScriptedCompletion({"narrative": "work on a scheduler"})
    messages = conversation()
    summarizer = LLMSummarizer(
        completion, models=["gpt-4o"], cache_aligned=True, max_input_tokens=50_000
    )
    record = summarizer.summarize(messages)
    assert len(completion.requests) == 1
    assert record.model == "gpt-4o"
    assert record.narrative == "work on a scheduler"
    assert record.sections.primary_request[0] == record.added[0]
    assert messages[1].text.startswith(record.added[0].removesuffix("…"))


def test_a_conversation_over_the_cap_is_summarized_without_alignment(
    caplog: pytest.LogCaptureFixture,
):
    responder = numbered_summaries()
    with caplog.at_level(logging.INFO, "synopsis.summarizers"):
        make(responder, cache_aligned=True, max_input_tokens=3000).summarize(long_session(12))
    assert all(r.conversation == () and r.system == SYSTEM_PROMPT for r in responder.requests)
    assert "without cache alignment" in caplog.text


def test_merges_answered_with_no_summary_join_the_partials_as_they_are(
    caplog: pytest.LogCaptureFixture,
):
    responder = ScriptedCompletion()

    def fails_merges(request: CompletionRequest) -> CompletionResponse | str:
        if "<partial_summaries>" in request.messages[-1]["content"]:
            return ""
        return numbered(responder, _padded(8))

    responder.default = fails_merges
    messages = long_session(30)
    with caplog.at_level(logging.WARNING, "synopsis.summarizers"):
        record = make(responder, max_input_tokens=2000, max_summary_tokens=4000).summarize(messages)
    assert record.model == "gpt-4o"
    assert len(record.covers) == len(messages)
    chunks = kinds_of(responder).count("chunk")
    assert kinds_of(responder).count("merge") >= 2  # every round asked, none answered
    # The narratives of the chunks, oldest first, as far as the budget holds them.
    narratives = record.narrative.split("\n")
    assert narratives == sorted(narratives, key=lambda n: int(n.split()[-1]))
    assert narratives[-1] == f"summary {chunks}" or record.truncated
    assert "joined as they are" in caplog.text


def test_an_intermediate_merge_that_failed_in_transport_falls_back_for_the_whole_input():
    responder = ScriptedCompletion()

    def fails_merges(request: CompletionRequest) -> CompletionResponse | Exception:
        if "<partial_summaries>" in request.messages[-1]["content"]:
            return TimeoutError()
        return numbered(responder, _padded(8))

    responder.default = fails_merges
    record = make(
        responder, max_input_tokens=2000, max_summary_tokens=4000, max_retries=0
    ).summarize(long_session(30))
    assert record.model == "rules"
    assert kinds_of(responder).count("merge") == 1


def test_a_joined_summary_not_shorter_than_its_input_falls_back():
    responder = ScriptedCompletion()
    bulky = {"key_points": [f"point {i}: " + "detail " * 60 for i in range(30)]}

    def fails_merges(request: CompletionRequest) -> CompletionResponse | str:
        if "<partial_summaries>" in request.messages[-1]["content"]:
            return ""
        return numbered(responder, bulky)

    responder.default = fails_merges
    record = make(responder, max_input_tokens=1200, max_summary_tokens=4000).summarize(
        long_session(2, 25)
    )
    assert record.model == "rules"


def test_a_partial_too_big_to_pair_passes_to_the_next_round_alone():
    responder = ScriptedCompletion()
    responder.default = lambda request: numbered(
        responder, _padded(60) if len(responder.requests) == 2 else _padded(4)
    )
    cap = 2000
    make(responder, max_input_tokens=cap, max_summary_tokens=4000).summarize(long_session(30))
    merges = [r for r in responder.requests if "<partial_summaries>" in r.messages[-1]["content"]]
    # The big second partial ("summary 2") cannot share a merge with a neighbour: it goes
    # on alone, and only the last request (truncated to fit) quotes it.
    texts = [m.messages[-1]["content"] for m in merges]
    assert not any('"summary 2"' in text for text in texts[:-1])
    assert '"summary 2"' in texts[-1]
    assert all(prompt_tokens(r) <= cap for r in responder.requests)


def test_trim_of_a_history_without_user_text_keeps_the_newest():
    messages = long_session(12)[1:]
    responder = numbered_summaries()
    make(responder, max_input_tokens=3000, oversize="trim").summarize(messages)
    content = responder.requests[0].messages[-1]["content"]
    assert content.count("omitted: over the summarizer's input cap") == 1
    assert "Read part 11" in content


def test_cache_aligned_revision_quotes_the_previous_summary():
    previous = SummaryRecord(narrative="earlier: sched/legacy.py was split")
    responder = numbered_summaries()
    summarizer = make(responder, cache_aligned=True, max_input_tokens=50_000)
    record = summarizer.summarize(conversation(), previous=previous)
    assert "sched/legacy.py was split" in responder.requests[0].messages[0]["content"]
    assert record.parent_id == previous.id


def test_nothing_to_summarize_asks_no_model():
    responder = numbered_summaries()
    summarizer = make(responder)
    assert summarizer.summarize([]).model == "rules"
    assert asyncio.run(summarizer.asummarize([])).model == "rules"
    assert responder.requests == []


def test_partials_joined_keep_every_distinct_item_within_each_cap():
    def part(n: int, **fields: Any) -> SummaryRecord:
        return SummaryRecord(narrative=f"part {n}", **fields)

    task = ActionItem(owner="assistant", task="add a test")
    content = joined(
        [
            part(
                1,
                key_points=("read a.py",),
                sections=Sections(
                    primary_request=("Port the scheduler",),
                    user_messages=tuple(f"request {i}" for i in range(40)),
                    next_step="read b.py",
                ),
                facets=Facets(action_items=(task,), entities=Entities(files=("a.py",))),
            ),
            part(
                2,
                key_points=("read a.py", "read b.py"),
                sections=Sections(
                    primary_request=("Then the docs",),
                    user_messages=tuple(f"request {i}" for i in range(40, 80)),
                ),
                facets=Facets(
                    participants=("the person",),
                    action_items=(task,),
                    entities=Entities(files=("a.py", "b.py")),
                ),
            ),
        ]
    )
    assert content.narrative == "part 1\npart 2"
    assert content.key_points == ("read a.py", "read b.py")
    assert content.sections.primary_request == ("Port the scheduler", "Then the docs")
    users = content.sections.user_messages
    assert len(users) == MAX_SECTION_ITEMS
    assert users[-1] == "request 79"
    assert content.sections.next_step == "read b.py"
    assert content.facets.action_items == (task,)
    assert content.facets.participants == ("the person",)
    assert content.facets.entities.files == ("a.py", "b.py")
    assert joined([SummaryRecord()]).narrative == "(joined)"
