"""The OpenAI Agents SDK's ``OpenAIResponsesCompactionSession`` through the proxy: an agent
whose model is the proxy (in front of the fake upstream, scripted to call a tool) runs tool
loops in one session; the session compacts with the proxy's ``/v1/responses/compact``. Every
request the upstream gets is valid and holds synopsis's summary in place of the compacted
history; the originals are recallable."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import agents
from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, SQLiteSession, function_tool
from agents.memory import OpenAIResponsesCompactionSession
from openai import AsyncOpenAI

from synopsis.messages import is_summary_text
from synopsis.proxy import create_app
from synopsis.proxy.native_openai import MARK
from synopsis.testing.server import FakeLLMServer, Reply, response
from synopsis.validation import validate
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from synopsis.testing.server import Recorded

agents.set_tracing_disabled(True)

OUTPUT = "PASSED " * 200


@function_tool
def bash(cmd: str) -> str:
    """Run a shell command."""
    return f"$ {cmd}\n{OUTPUT}"


def _call(k: int) -> dict[str, Any]:
    """The upstream's answer that calls the tool once more."""
    body = response("")
    body["id"] = f"resp_{k}"
    arguments = json.dumps({"cmd": f"pytest -k t{k}"})
    call = {"type": "function_call", "id": f"fc_{k}", "call_id": f"c{k}", "name": "bash"}
    body["output"] = [{**call, "arguments": arguments, "status": "completed"}]
    return body


def _answer(recorded: Recorded) -> Reply:
    return Reply(response("all pass"))


def _valid(recorded: Recorded) -> None:
    body = recorded.body
    assert "context_management" not in body
    assert validate(body["input"], "responses", format="responses") == []
    assert not [i for i in body["input"] if i.get("type") == "compaction"]


def test_a_compaction_session_runs_tool_loops_through_the_proxy() -> None:
    loops, calls = 3, 12
    with FakeLLMServer(default=_answer) as upstream:
        for k in range(loops * calls):
            if k and k % calls == 0:
                upstream.add(response("all pass"))
            upstream.add(_call(k))
        app = create_app(upstream_openai=upstream.root, environ={}, context_management="emulate")
        with Served(app) as served:
            client = AsyncOpenAI(
                base_url=f"{served.url}/v1",
                api_key="sk-test",
                max_retries=0,
                # one proxy session for the agent's whole run: each compaction's originals
                # under one name
                default_headers={"x-synopsis-session": "run"},
            )
            agent = Agent(
                name="tester",
                instructions="Run the tests.",
                tools=[bash],
                model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client),
                model_settings=ModelSettings(store=False),
            )
            stored = SQLiteSession("run")
            session = OpenAIResponsesCompactionSession("run", stored, client=client)

            async def run() -> list[Any]:
                async with client:
                    return await loop_all()

            async def loop_all() -> list[Any]:
                for i in range(loops):
                    result = await Runner.run(
                        agent, f"Run test group {i}", session=session, max_turns=calls + 2
                    )
                    assert result.final_output == "all pass"
                return await session.get_items()

            items = asyncio.run(run())
            stored.close()
            (item,) = [i for i in items if i.get("type") == "compaction"]
            mark = json.loads(item["encrypted_content"].removeprefix(MARK))
            originals = served.state.compactors.store.recall(mark["session"])
    requests = upstream.requests
    assert len(requests) == loops * (calls + 1)
    for recorded in requests:
        _valid(recorded)
    # After the first loop, each request opens on synopsis's summary of what came before,
    # not on the compacted history.
    later = requests[calls + 1 :]
    assert all(is_summary_text(r.body["input"][0]["content"]) for r in later)
    # the summary, the three items it kept (the last call, its output, the answer), the new
    # question, and this loop's calls: never the loops before
    assert max(len(r.body["input"]) for r in later) == 1 + 3 + 1 + 2 * calls
    # The session holds the window of the last compaction: synopsis's item, read back, and
    # the originals it stands for recallable.
    assert is_summary_text(mark["summary"])
    outputs = {json.loads(o.data).get("output") for o in originals}
    assert mark["session"] == "run:compact"
    assert {f"$ pytest -k t{k}\n{OUTPUT}" for k in (0, calls, 2 * calls)} <= outputs
