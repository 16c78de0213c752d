"""A LangChain v1 agent that keeps its history inside a small context window with synopsis.

Runs offline: LangChain's own fake chat model plays the model (it calls a tool, then replies),
and synopsis's default summarizer needs no model. ``SynopsisMiddleware`` compacts the agent's
state before a model call when the history nears the window, so the checkpoint keeps the
compacted history; what it replaced stays recallable from the store.

    python examples/langchain_agent.py

To use a real model, replace the fake one (``pip install langchain-openai``):

    model = init_chat_model("openai:gpt-4o")          # from langchain.chat_models
    middleware = SynopsisMiddleware(model="gpt-4o")   # the model's own window
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from synopsis import CompactionCompleted, Event
from synopsis.adapters.langchain import SynopsisMiddleware

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from langchain_core.runnables import RunnableConfig

TURNS = 60


@tool
def run_tests(name: str) -> str:
    """Run one test and return its output."""
    return f"tests/{name}.py " + "PASSED " * 150


class ScriptedModel(GenericFakeChatModel):
    """The fake model: a tool call, then a short reply once the result is in."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # noqa: ANN401
        return self


def script() -> Iterator[AIMessage]:
    for k in range(TURNS):
        call = {"name": "run_tests", "args": {"name": f"test_{k}"}, "id": f"call_{k}"}
        yield AIMessage("", tool_calls=[call])
        yield AIMessage(f"test_{k} passes.")


def main() -> None:
    compactions: list[CompactionCompleted] = []

    def hear(event: Event) -> None:
        if isinstance(event, CompactionCompleted):
            compactions.append(event)

    middleware = SynopsisMiddleware(model="gpt-4o", context_window=8000, listeners=[hear])
    agent = create_agent(
        ScriptedModel(messages=script()),
        tools=[run_tests],
        system_prompt="You are a careful coding agent.",
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "demo"}}
    for k in range(TURNS):
        agent.invoke({"messages": [HumanMessage(f"Run test_{k}.")]}, config)

    state = agent.get_state(config).values["messages"]
    recalled = middleware.recall("demo")
    print(f"turns: {TURNS}, messages the agent produced: {4 * TURNS}")
    print(f"compactions: {len(compactions)}")
    print(f"messages in the checkpoint now: {len(state)}")
    print(f"recalled from the store: {len(recalled)} messages, first: {recalled[0].id}")
    summary = next(m for m in state if "<synopsis-summary" in str(m.content))
    print("summary the model reads:", str(summary.content)[:200].replace("\n", " "), "...")


if __name__ == "__main__":
    main()
