"""A pydantic-ai agent whose history synopsis keeps inside a small window, offline.

Run it with ``python examples/pydantic_ai_agent.py`` (needs ``pip install
"synopsis[pydantic-ai]"``). A scripted ``FunctionModel`` plays the model: each turn it runs a
tool whose output is long, then answers. The synopsis capability compacts the history before
each model request, keeps the result as the run's own history (so the next turn continues
from it), and stores what it replaced, which ``recall`` gives back.

To use a real model, change the two marked lines::

    agent = Agent("anthropic:claude-sonnet-4-5", capabilities=[capability], ...)
    capability = SynopsisCapability(model="claude-sonnet-4-5", summarizer="anthropic")
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from synopsis import CompactionCompleted, Event
from synopsis.adapters.pydantic_ai import SynopsisCapability

events: list[Event] = []


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Run the tests once per turn, then report."""
    last = messages[-1]
    if any(part.part_kind == "tool-return" for part in last.parts):
        return ModelResponse(parts=[TextPart(f"Tests pass ({len(messages)} messages in view).")])
    return ModelResponse(parts=[ToolCallPart("run_tests", {"target": "tests/"})])


capability: SynopsisCapability[None] = SynopsisCapability(  # real model: see the docstring
    model="claude-sonnet-4-5", context_window=4000, listeners=[events.append]
)
agent = Agent(  # real model: see the docstring
    FunctionModel(scripted),
    capabilities=[capability],
    instructions="You are a careful coding agent.",
)


@agent.tool_plain
def run_tests(target: str) -> str:
    """Run the test suite under ``target``."""
    return f"collected 40 items in {target}\n" + "tests/test_app.py::test_case PASSED\n" * 40


def main() -> None:
    history: list[ModelMessage] = []
    for turn in range(30):
        result = agent.run_sync(f"Turn {turn}: fix the next failing test.", message_history=history)
        history = result.all_messages()
    compactions = [e for e in events if isinstance(e, CompactionCompleted)]
    conversation = history[-1].conversation_id
    print(f"turns: 30, history now: {len(history)} messages")
    print(f"compactions: {len(compactions)}")
    print(f"last answer: {result.output}")
    recalled = capability.compactor.recall(conversation)
    print(f"recalled {len(recalled)} replaced messages; the first: {recalled[0].text[:60]!r}")


if __name__ == "__main__":
    main()
