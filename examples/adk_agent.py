"""A Google ADK agent that keeps its requests inside a small context window with synopsis.

Runs offline: a ten-line ``BaseLlm`` plays the model (it calls a tool, then replies), and
synopsis's default summarizer needs no model. ``SynopsisPlugin`` compacts each request before
it reaches the model; the session keeps every event, and what a compaction replaced stays
recallable from synopsis's store under the ADK session's id.

    python examples/adk_agent.py

To use a real model, give the agent its name and synopsis the same one (the key comes from
``GOOGLE_API_KEY``):

    root = LlmAgent(name="coder", model="gemini-2.5-flash", tools=[run_tests], ...)
    plugin = SynopsisPlugin(model="gemini-2.5-flash")   # the model's own window
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from synopsis import CompactionCompleted, Event
from synopsis.adapters.adk import SynopsisPlugin

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from google.adk.models.llm_request import LlmRequest

TURNS = 40
SEEN: list[int] = []  # contents in each request (BaseLlm is a pydantic model: no fields here)


def run_tests(name: str) -> str:
    """Run one test and return its output."""
    return f"tests/{name}.py " + "PASSED " * 150


class OfflineModel(BaseLlm):
    """Calls ``run_tests`` once for each user message, then replies."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        SEEN.append(len(llm_request.contents))
        last = llm_request.contents[-1].parts or []
        if any(p.function_response is not None for p in last):
            part = types.Part(text="The test passes; next one.")
        else:
            call = types.FunctionCall(name="run_tests", args={"name": f"test_{len(SEEN)}"})
            part = types.Part(function_call=call)
        # What Gemini reports with each answer (ADK logs a notice when it is missing).
        sent = sum(len(c.model_dump_json(exclude_none=True)) for c in llm_request.contents)
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=sent // 4)
        content = types.Content(role="model", parts=[part])
        yield LlmResponse(content=content, usage_metadata=usage)


async def main() -> None:
    compactions: list[CompactionCompleted] = []

    def hear(event: Event) -> None:
        if isinstance(event, CompactionCompleted):
            compactions.append(event)

    plugin = SynopsisPlugin(model="gemini-2.5-flash", context_window=8000, listeners=[hear])
    root = LlmAgent(
        name="coder",
        model=OfflineModel(model="offline"),
        instruction="You are a coding agent. Make the failing tests pass.",
        tools=[run_tests],
    )
    runner = Runner(
        app=App(name="demo", root_agent=root, plugins=[plugin]),
        session_service=InMemorySessionService(),
    )
    session = await runner.session_service.create_session(app_name="demo", user_id="me")
    for turn in range(TURNS):
        message = types.Content(role="user", parts=[types.Part(text=f"Fix test_{turn}.")])
        async for _ in runner.run_async(user_id="me", session_id=session.id, new_message=message):
            pass

    stored = await runner.session_service.get_session(
        app_name="demo", user_id="me", session_id=session.id
    )
    assert stored is not None
    last = plugin.last
    assert last is not None
    print(f"{TURNS} user turns, {len(SEEN)} model calls")
    print(f"session events kept by ADK: {len(stored.events)}")
    print(f"contents the model saw last: {SEEN[-1]} (largest request: {max(SEEN)})")
    print(f"compactions: {len(compactions)}; last request {last.tokens_after} tokens")
    print(f"recallable from the store: {len(plugin.compactor.recall(session.id))} contents")
    hit = plugin.compactor.search("test_3", session.id, limit=1)
    if hit:
        print(f"search 'test_3': {hit[0].message.data[:60]}...")


if __name__ == "__main__":
    asyncio.run(main())
