"""synopsis's summarizer behind ADK's own events compaction: ADK picks the events and keeps
the summary event in the session; synopsis writes the summary, offline by default, or with a
model awaited, and extends its own last summary rather than summarizing its text again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

import synopsis
from synopsis.adapters.adk import SynopsisEventsSummarizer
from synopsis.summarizers import RuleBasedSummarizer, SummaryRecord
from synopsis.testing import ScriptedCompletion
from tests.adapters.test_adk import REQUESTS, agent, turns

if TYPE_CHECKING:
    from collections.abc import Sequence

# ADK marks its compaction config experimental and warns once per process when one is made;
# that warning is ADK's notice about its own API, not a defect here.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:\[EXPERIMENTAL\] EventsCompactionConfig:UserWarning"
)


def run_app(config: EventsCompactionConfig, count: int) -> list[Event]:
    app = App(name="demo", root_agent=agent(), events_compaction_config=config)
    runner = Runner(app=app, session_service=InMemorySessionService())

    async def main() -> list[Event]:
        session = await runner.session_service.create_session(app_name="demo", user_id="u")
        await turns(runner, session.id, count)
        stored = await runner.session_service.get_session(
            app_name="demo", user_id="u", session_id=session.id
        )
        assert stored is not None
        return stored.events

    return asyncio.run(main())


def summaries(events: list[Event]) -> list[str]:
    out = []
    for event in events:
        compaction = event.actions.compaction
        if compaction is not None and compaction.compacted_content is not None:
            parts = compaction.compacted_content.parts or []
            out.append(parts[0].text or "")
    return out


def test_adk_compacts_its_session_with_synopsis_summaries() -> None:
    REQUESTS.clear()
    summarizer = SynopsisEventsSummarizer()
    config = EventsCompactionConfig(summarizer=summarizer, compaction_interval=3, overlap_size=1)
    events = run_app(config, 12)
    texts = summaries(events)
    assert len(texts) >= 3
    assert all(t.startswith("<synopsis-summary") for t in texts)
    assert summarizer.last is not None
    assert "Turn 11" in texts[-1] or "case_11" in texts[-1]
    # The requests after a compaction carry its summary (the last one was made after the
    # last request), and every request is valid Gemini.
    assert any(
        part.get("text") == texts[-2]
        for seen in REQUESTS[-4:]
        for item in seen.contents
        for part in item["parts"]
    )
    for seen in REQUESTS:
        assert synopsis.validate(seen.contents, "gemini", format="gemini", system=seen.system) == []


def test_a_summary_handed_back_by_adk_is_extended_not_read_as_text() -> None:
    REQUESTS.clear()
    summarizer = SynopsisEventsSummarizer()
    config = EventsCompactionConfig(
        summarizer=summarizer, token_threshold=300, event_retention_size=4
    )
    events = run_app(config, 10)
    assert len(summaries(events)) >= 3
    assert summarizer.last is not None
    assert summarizer.last.depth >= 2  # each one built on the one before
    for seen in REQUESTS:
        assert synopsis.validate(seen.contents, "gemini", format="gemini", system=seen.system) == []


def event(text: str, role: str = "user") -> Event:
    content = types.Content(role=role, parts=[types.Part(text=text)])
    return Event(author="user" if role == "user" else "coder", content=content)


def test_a_model_summarizer_is_awaited() -> None:
    told = "The user asked: Port sched/core.py to asyncio. It must keep its API."
    completion = ScriptedCompletion(default={"narrative": told})
    llm = synopsis.LLMSummarizer(completion.acall, models=["gemini-2.5-flash"])
    summarizer = SynopsisEventsSummarizer(llm, style="snapshot", instructions="Keep file names.")
    found = asyncio.run(
        summarizer.maybe_summarize_events(
            events=[
                event("Port sched/core.py to asyncio. " + "It must keep its API. " * 40),
                event("Done: " + "ported one function. " * 40, "model"),
            ]
        )
    )
    assert found is not None
    assert found.actions.compaction is not None
    content = found.actions.compaction.compacted_content
    assert content is not None
    assert told in ((content.parts or [])[0].text or "")
    assert len(completion.requests) == 1
    assert "Keep file names." in str(completion.requests[0])


class Blocking:
    """A summarizer with only the blocking method (a model behind a sync client)."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(
        self,
        messages: Sequence[synopsis.Message],
        *,
        previous: SummaryRecord | None = None,
        instructions: str | None = None,
        max_tokens: int | None = None,
    ) -> SummaryRecord:
        self.calls += 1
        return RuleBasedSummarizer().summarize(
            messages, previous=previous, instructions=instructions, max_tokens=max_tokens
        )


def test_a_blocking_summarizer_runs_off_the_event_loop() -> None:
    blocking = Blocking()
    summarizer = SynopsisEventsSummarizer(blocking, max_tokens=400)
    found = asyncio.run(summarizer.maybe_summarize_events(events=[event("Fix app.py")]))
    assert found is not None
    assert blocking.calls == 1


def test_nothing_to_summarize_gives_no_event() -> None:
    summarizer = SynopsisEventsSummarizer()
    assert asyncio.run(summarizer.maybe_summarize_events(events=[])) is None
    empty = Event(author="user", content=types.Content(role="user", parts=[]))
    assert asyncio.run(summarizer.maybe_summarize_events(events=[empty, Event(author="x")])) is None


def test_only_the_latest_summaries_are_remembered() -> None:
    summarizer = SynopsisEventsSummarizer()

    def summarize(events: list[Event]) -> str:
        found = asyncio.run(summarizer.maybe_summarize_events(events=events))
        assert found is not None
        assert found.actions.compaction is not None
        content = found.actions.compaction.compacted_content
        assert content is not None
        return (content.parts or [])[0].text or ""

    first = summarize([event("Port the scheduler"), event("On it.", "model")])
    summarize([event(first, "model"), event("Next: the tests")])
    assert summarizer.last is not None
    assert summarizer.last.depth == 1
    for n in range(64):
        summarize([event(f"Task {n}")])
    summarize([event(first, "model"), event("Next: the tests")])
    assert summarizer.last.depth == 0  # forgotten: read as text like any other turn
