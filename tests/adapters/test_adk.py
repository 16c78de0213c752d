"""synopsis as a Google ADK ``before_model_callback`` and plugin, run with ADK's own runner and
an offline model: every request the model receives is valid Gemini and within the window,
compactions happen, the session's events stay as the agent wrote them, kept contents are the
agent's own objects, and what a compaction replaced is recallable."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner, Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

import synopsis
from synopsis.adapters.adk import SynopsisCallback, SynopsisPlugin, to_wire
from synopsis.errors import ConfigurationError
from tests.adapters.clearing import cleared, recalled
from tests.unmeasured import unmeasured_environ

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator


@dataclass(frozen=True)
class Seen:
    """One request as the model received it, in Gemini's wire JSON."""

    contents: list[dict[str, Any]]
    system: object
    tools: list[dict[str, Any]] | None
    objects: tuple[types.Content, ...]


# BaseLlm is a pydantic model: what it records lives here, not in fields.
REQUESTS: list[Seen] = []


def signature(n: int) -> bytes:
    """A thought signature with bytes no text encoding would keep."""
    return b"\x00\xffsig" + n.to_bytes(4, "big")


class ToolLoopLlm(BaseLlm):
    """Calls the ``run`` tool once for each user message, then answers: a tool-using agent's
    shape, offline. Each call carries a thought signature, as Gemini's do."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        system = llm_request.config.system_instruction
        tools = llm_request.config.tools or []
        REQUESTS.append(
            Seen(
                [to_wire(c) for c in llm_request.contents],
                system,
                [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for t in tools
                    if isinstance(t, types.Tool)
                ]
                if tools
                else None,
                tuple(llm_request.contents),
            )
        )
        n = len(REQUESTS)
        last = llm_request.contents[-1].parts or []
        if any(p.function_response is not None for p in last):
            part = types.Part(text=f"Step {n} done; the tests pass.")
        else:
            call = types.FunctionCall(name="run", args={"cmd": f"pytest -k case_{n}"})
            part = types.Part(function_call=call, thought_signature=signature(n))
        # About what Gemini would report, so that ADK's token threshold can be reached.
        prompt = len(json.dumps(REQUESTS[-1].contents)) // 4
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=prompt)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def run(cmd: str) -> dict[str, str]:
    """Run a shell command."""
    return {"output": f"$ {cmd}\n" + " ".join(f"{cmd}-line{k}" for k in range(12))}


def agent(**callbacks: Any) -> LlmAgent:
    return LlmAgent(
        name="coder",
        model=ToolLoopLlm(model="fake"),
        instruction="You are a coding agent. Fix the failing tests.",
        tools=[run],
        **callbacks,
    )


async def turns(runner: Runner, session_id: str, count: int, start: int = 0) -> None:
    for t in range(start, start + count):
        text = f"Turn {t}: fix case_{t} in module_{t % 7}.py"
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
            pass


def tokens(compactor: synopsis.Compactor, seen: Seen) -> int:
    """The request's tokens as the Compactor counts them: contents, system and tools."""
    decoded = synopsis.decode(seen.contents, format="gemini", system=seen.system)
    return compactor.setup.counter.count_messages(decoded.messages, tools=seen.tools)


def canonical(item: object) -> str:
    return json.dumps(item, sort_keys=True)


def as_sent(content: types.Content) -> str:
    """A session content as ADK sends it: without the call ids it made up itself."""
    item = to_wire(content)
    for part in item["parts"]:
        for key in ("functionCall", "functionResponse"):
            if part.get(key, {}).get("id", "").startswith("adk-"):
                del part[key]["id"]
    return canonical(item)


def test_a_tool_using_agent_runs_120_turns_in_a_small_window() -> None:
    """120 model turns: 60 user messages, each answered by a tool call and a reply; six
    compactions, the later ones of histories holding a summary already. (ADK copies the whole
    session for each run and each request, so the test's own cost grows with the square of
    its length: 210 turns took more than twice as long, for no other case.)"""
    REQUESTS.clear()
    completed: list[synopsis.Event] = []
    callback = SynopsisCallback(
        model="gemini-2.5-flash", context_window=4000, listeners=[completed.append]
    )
    runner = InMemoryRunner(agent=agent(before_model_callback=callback), app_name="demo")

    async def main() -> tuple[str, list[types.Content]]:
        session = await runner.session_service.create_session(app_name="demo", user_id="u")
        await turns(runner, session.id, 60)
        stored = await runner.session_service.get_session(
            app_name="demo", user_id="u", session_id=session.id
        )
        assert stored is not None
        assert callback.last is not None
        assert callback.last.session_id == session.id
        return session.id, [e.content for e in stored.events if e.content is not None]

    session_id, contents = asyncio.run(main())
    compactor = callback.compactor
    assert len(REQUESTS) == 120
    for seen in REQUESTS:
        assert synopsis.validate(seen.contents, "gemini", format="gemini", system=seen.system) == []
        assert tokens(compactor, seen) <= compactor.setup.limit
    compactions = [e for e in completed if isinstance(e, synopsis.CompactionCompleted)]
    assert len(compactions) >= 4
    # The session holds every content the agent produced, none of them a summary.
    assert len(contents) == 4 * 60
    assert not any("synopsis-summary" in canonical(to_wire(c)) for c in contents)
    # The newest call reached the model with its thought signature's bytes intact.
    last = REQUESTS[-1]
    assert any(p.thought_signature == signature(119) for c in last.objects for p in c.parts or [])
    # Every content of the session that the last request no longer carries is recallable
    # (part by part: Gemini's turns alternate, so a user message that followed the summary
    # was stored inside the turn it was merged into).
    recalled = [json.loads(m.data) for m in compactor.recall(session_id)]
    found = {canonical(part) for item in [*recalled, *last.contents] for part in item["parts"]}
    missing = [
        part
        for c in contents[:-1]  # the last answer was never sent
        for part in json.loads(as_sent(c))["parts"]
        if canonical(part) not in found
    ]
    assert missing == []


def test_the_plugin_serves_many_sessions_each_under_its_own_id() -> None:
    REQUESTS.clear()
    plugin = SynopsisPlugin(
        model="gemini-2.5-flash", context_window=3000, conversations=1, store="memory"
    )
    app = App(name="demo", root_agent=agent(), plugins=[plugin])
    runner = Runner(app=app, session_service=InMemorySessionService())

    async def main() -> list[str]:
        ids = []
        for _ in range(2):
            session = await runner.session_service.create_session(app_name="demo", user_id="u")
            ids.append(session.id)
        # Alternate: each comes back after the other was used, four times (ADK copies a session
        # for each request, so longer blocks cost more and more, for nothing more).
        for start in range(0, 24, 6):
            for session_id in ids:
                await turns(runner, session_id, 6, start)
        return ids

    ids = asyncio.run(main())
    assert plugin.compactor.setup.store is plugin.store
    assert plugin.store is not None
    assert len(plugin.callback._seen) == 1  # the bound: one conversation kept converted
    for session_id in ids:
        assert plugin.compactor.recall(session_id)
        assert plugin.compactor.search("case_3", session_id)
    for seen in REQUESTS:
        assert synopsis.validate(seen.contents, "gemini", format="gemini", system=seen.system) == []
    assert plugin.last is not None
    assert plugin.last.session_id == ids[1]


def history(calls: int, *, size: int = 60) -> list[types.Content]:
    out = [types.Content(role="user", parts=[types.Part(text="Port the scheduler to asyncio.")])]
    for k in range(calls):
        call = types.FunctionCall(id=f"c{k}", name="run", args={"cmd": f"pytest -k t{k}"})
        out.append(
            types.Content(
                role="model", parts=[types.Part(function_call=call, thought_signature=signature(k))]
            )
        )
        answer = types.FunctionResponse(
            id=f"c{k}", name="run", response={"output": f"t{k} " + "PASSED " * size}
        )
        out.append(types.Content(role="user", parts=[types.Part(function_response=answer)]))
    return out


def test_kept_contents_are_the_objects_given_and_only_the_summary_is_new() -> None:
    callback = SynopsisCallback(model="gemini-2.5-flash", context_window=3000)
    given = history(30)
    request = LlmRequest(contents=list(given))
    result = asyncio.run(callback.compact(request, "s"))
    assert result.compacted
    assert callback.last is result
    new = [c for c in request.contents if all(c is not g for g in given)]
    assert len(new) == 1
    assert "synopsis-summary" in canonical(to_wire(new[0]))
    assert request.contents[-1] is given[-1]
    # A resent history, grown by one exchange, gets the same summary back.
    grown = [*given, *history(31)[-2:]]
    again = LlmRequest(contents=list(grown))
    asyncio.run(callback.compact(again, "s"))
    assert to_wire(again.contents[0]) == to_wire(new[0])
    assert again.contents[-2:] == grown[-2:]
    assert all(any(c is g for g in grown) for c in again.contents[1:])


def test_a_request_whose_earlier_contents_changed_is_read_again() -> None:
    callback = SynopsisCallback(model="gemini-2.5-flash", context_window=3000)
    given = history(30)
    asyncio.run(callback.compact(LlmRequest(contents=list(given)), "s"))
    # Another hook, or ADK's own compaction, rewrote the start of the history.
    edited = [types.Content(role="user", parts=[types.Part(text="Port it to trio.")]), *given[1:]]
    request = LlmRequest(contents=list(edited))
    result = asyncio.run(callback.compact(request, "s"))
    assert result.compacted
    assert "Port it to trio." in canonical(to_wire(request.contents[0]))
    assert all(any(c is e for e in edited) for c in request.contents[1:])
    shorter = LlmRequest(contents=history(3))
    asyncio.run(callback.compact(shorter, "s"))
    assert shorter.contents == history(3)


def test_a_request_under_the_trigger_is_left_as_it_was() -> None:
    callback = SynopsisCallback(model="gemini-2.5-flash", context_window=100_000)
    given = history(3)
    request = LlmRequest(contents=given)
    before = request.contents
    result = asyncio.run(callback.compact(request, "s"))
    assert not result.compacted
    assert request.contents is before


def test_the_system_instruction_and_tools_are_counted() -> None:
    def measured(instruction: object, tools: list[Any] | None = None) -> int:
        callback = SynopsisCallback(model="gemini-2.5-flash", context_window=100_000)
        request = LlmRequest(contents=history(1))
        request.config.system_instruction = instruction  # type: ignore[assignment]
        request.config.tools = tools
        result = asyncio.run(callback.compact(request, "s"))
        return result.tokens_before

    bare = measured(None)
    text = "You are a careful coding agent. " * 20
    as_text = measured(text)
    assert as_text > bare + 100
    as_content = measured(types.Content(parts=[types.Part(text=text)]))
    as_part = measured(types.Part(text=text))
    as_list = measured([text, types.Part(text="Answer briefly.")])
    assert as_content == as_part
    assert as_list > as_text - 10
    declaration = types.FunctionDeclaration(name="run", description="Run a shell command. " * 10)
    tool = types.Tool(function_declarations=[declaration])
    with_tools = measured(None, [tool, run])  # a bare function is not a declaration yet
    assert with_tools > bare + 50
    assert measured(None, []) == measured(None, [run]) == bare


def answer(content: types.Content) -> types.FunctionResponse | None:
    """The function response a content holds as its first part, if it does."""
    return content.parts[0].function_response if content.parts else None


def test_the_clearing_strategy_makes_old_function_responses_placeholders() -> None:
    """``strategy=("clear",)``, passed as any option: the oldest function responses become
    placeholders (a ``FunctionResponse`` with its call's id and name), the newest three stay
    whole, nothing is summarized, every other content is the object given, and the
    placeholder's recall gives the original back."""
    callback = SynopsisCallback(model="gemini-2.5-flash", context_window=4000, strategy=("clear",))
    given = history(10, size=150)
    request = LlmRequest(contents=list(given))
    assert asyncio.run(callback.compact(request, "s")).compacted
    out = request.contents
    assert len(out) == len(given)
    answers = [(o, g) for o, g in zip(out, given, strict=True) if answer(g) is not None]
    texts = [str((answer(o).response or {}).get("output")) for o, _ in answers]  # type: ignore[union-attr]
    placeholders = [a for a, text in zip(answers, texts, strict=True) if cleared(text)]
    assert placeholders == answers[: len(placeholders)]  # the oldest
    assert 0 < len(placeholders) <= len(answers) - 3
    for (content, original), text in zip(placeholders, texts, strict=False):
        made, kept = answer(content), answer(original)
        assert made is not None
        assert kept is not None
        assert (content.role, made.id, made.name) == (original.role, kept.id, kept.name)
        assert json.dumps(kept.response) in recalled(callback.store, "s", text)
    new = {id(o) for o, _ in placeholders}
    assert all(o is g for o, g in zip(out, given, strict=True) if id(o) not in new)


def test_an_unchanged_system_instruction_and_tools_are_converted_once() -> None:
    """The Compactor recognises an unchanged request by the identity of its system prompt and
    tool definitions; ADK builds them anew for every request, equal to the last ones."""
    callback = SynopsisCallback(model="gemini-2.5-flash", context_window=100_000)
    given = history(2)
    passed: list[tuple[object, object]] = []
    for n in (1, 3, 5):
        request = LlmRequest(contents=given[:n])
        request.config.system_instruction = types.Content(parts=[types.Part(text="Be brief.")])
        declaration = types.FunctionDeclaration(name="run", description="Run a command.")
        request.config.tools = [types.Tool(function_declarations=[declaration])]
        asyncio.run(callback.compact(request, "s"))
        conversation = callback._seen["s"]
        passed.append((conversation._system, conversation._tools))
    assert all(system is passed[0][0] for system, _ in passed)
    assert all(tools is passed[0][1] for _, tools in passed)
    request = LlmRequest(contents=given)
    request.config.system_instruction = "Be thorough."
    asyncio.run(callback.compact(request, "s"))
    assert callback._seen["s"]._system == "Be thorough."
    assert callback._seen["s"]._tools is None


def test_the_callback_takes_a_compactor_or_its_options_but_not_both() -> None:
    compactor = synopsis.Compactor(model="gemini-2.5-flash")
    assert SynopsisCallback(compactor=compactor).compactor is compactor
    assert SynopsisPlugin(compactor=compactor).compactor is compactor
    assert SynopsisCallback(model="gemini-2.5-flash").store is None
    with pytest.raises(ConfigurationError, match="not both"):
        SynopsisCallback(compactor=compactor, context_window=1000)
    with pytest.raises(ConfigurationError, match="at least 1"):
        SynopsisCallback(conversations=0)


def test_without_adk_the_module_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "google.adk" or n.startswith("google.adk.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "synopsis.adapters.adk")
    with pytest.raises(ImportError, match=r'pip install "synopsis\[adk\]"'):
        importlib.import_module("synopsis.adapters.adk")


def test_importing_synopsis_and_its_adapters_does_not_import_adk() -> None:
    code = "import sys, synopsis, synopsis.adapters; print('google.adk' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_the_example_runs_offline_and_says_what_happened() -> None:
    example = Path(__file__).parents[2] / "examples" / "adk_agent.py"
    out = subprocess.run(
        [sys.executable, str(example)],
        capture_output=True,
        text=True,
        check=True,
        timeout=50,
        env=unmeasured_environ(),
    ).stdout
    assert "40 user turns, 80 model calls" in out
    assert "session events kept by ADK: 160" in out
    compactions = int(out.split("compactions: ")[1].split(";")[0])
    recalled = int(out.split("recallable from the store: ")[1].split()[0])
    assert compactions >= 2
    assert recalled > 60
