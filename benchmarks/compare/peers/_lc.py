"""What the LangChain-based peers share: OpenAI chat dicts to ``langchain_core`` messages and
back, and a chat model whose reply is :func:`~benchmarks.compare.systems.fake_summary`.

OpenAI dicts become messages the way an OpenAI-backed LangChain history holds them: an
assistant's tool calls are parsed into ``AIMessage.tool_calls`` (``invalid_tool_calls`` when
the arguments are not JSON) by ``langchain_core``'s own parser, and the wire form is kept in
``additional_kwargs["tool_calls"]``, where ``langchain-openai`` before 0.3 put it. Parsing and
dumping JSON again would change the argument strings (spacing, key order, escapes), so the way
back uses the kept wire form whenever it still matches the parsed calls. No token counter
these peers use reads ``additional_kwargs``.

The way back repairs nothing: every ``ToolMessage`` becomes a ``tool`` message, whether or not
its call is still in the history, because the benchmark measures exactly that.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import TYPE_CHECKING, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import default_tool_parser
from langchain_core.outputs import ChatGeneration, ChatResult

from benchmarks.compare.systems import Items, fake_summary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_core.callbacks import CallbackManagerForLLMRun

_DEVELOPER = "__openai_role__"


def to_messages(items: Items, *, ids: bool = True) -> list[BaseMessage]:
    """``items`` as ``langchain_core`` messages. With ``ids``, each gets a fresh uuid4 id, as
    LangGraph's ``add_messages`` reducer gives every message that enters an agent's state."""
    out = [_to_message(item) for item in items]
    if ids:
        for message in out:
            message.id = str(uuid.uuid4())
    return out


def _to_message(item: dict[str, Any]) -> BaseMessage:
    role = item["role"]
    content = item.get("content")
    if content is None:
        content = ""
    extra: dict[str, Any] = {}
    if item.get("name") is not None:
        extra["name"] = item["name"]
    if role in {"system", "developer"}:
        kwargs = {_DEVELOPER: "developer"} if role == "developer" else {}
        return SystemMessage(content=content, additional_kwargs=kwargs, **extra)
    if role == "user":
        return HumanMessage(content=content, **extra)
    if role == "assistant":
        raw = item.get("tool_calls") or []
        if not raw:
            return AIMessage(content=content, **extra)
        calls, invalid = default_tool_parser(raw)
        return AIMessage(
            content=content,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            additional_kwargs={"tool_calls": copy.deepcopy(raw)},
            **extra,
        )
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=item["tool_call_id"], **extra)
    return ChatMessage(role=role, content=content, **extra)


def to_items(messages: Sequence[BaseMessage]) -> Items:
    """``messages`` back in OpenAI chat shape, as they are: nothing dropped, paired or fixed."""
    return [_to_item(m) for m in messages]


def _to_item(message: BaseMessage) -> dict[str, Any]:
    item: dict[str, Any]
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get(_DEVELOPER, "system")
        item = {"role": role, "content": message.content}
    elif isinstance(message, HumanMessage):
        item = {"role": "user", "content": message.content}
    elif isinstance(message, AIMessage):
        calls = _tool_calls(message)
        content: Any = message.content
        if calls:
            item = {"role": "assistant", "content": content or None, "tool_calls": calls}
        else:
            item = {"role": "assistant", "content": content}
    elif isinstance(message, ToolMessage):
        item = {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    elif isinstance(message, ChatMessage):
        item = {"role": message.role, "content": message.content}
    else:
        raise TypeError(f"no OpenAI shape for {type(message).__name__}")
    if message.name is not None:
        item["name"] = message.name
    return item


def _tool_calls(message: AIMessage) -> list[dict[str, Any]]:
    """The wire form kept at conversion when it still says what the parsed calls say, else
    the parsed calls dumped again."""
    raw = message.additional_kwargs.get("tool_calls")
    if raw and _same_calls(raw, message):
        return copy.deepcopy(raw)
    out: list[dict[str, Any]] = [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
        }
        for call in message.tool_calls
    ]
    out.extend(
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["args"]},
        }
        for call in message.invalid_tool_calls
    )
    return out


def _same_calls(raw: list[dict[str, Any]], message: AIMessage) -> bool:
    """Whether ``raw`` still parses, call by call and in order, to the message's calls (as
    ``default_tool_parser`` split it: valid calls in order, the others in order)."""
    if len(raw) != len(message.tool_calls) + len(message.invalid_tool_calls):
        return False
    valid, invalid = iter(message.tool_calls), iter(message.invalid_tool_calls)
    for call in raw:
        fn = call.get("function") or {}
        arguments: Any = fn.get("arguments")
        try:
            args, parsed = json.loads(arguments), True
        except (TypeError, ValueError):
            args, parsed = arguments, False
        other: Any = next(valid if parsed else invalid, None)
        if other is None or (other["id"], other["name"]) != (call.get("id"), fn.get("name")):
            return False
        # default_tool_parser stores falsy parsed arguments as {}
        expected = (args or {}) if parsed else args
        if other["args"] != expected:
            return False
    return True


class FakeSummaryModel(BaseChatModel):
    """A chat model that answers every prompt with ``fake_summary(n)``: ``n`` is the number of
    messages it was sent minus ``instructions`` (the prompt's own trailing messages)."""

    instructions: int = 0
    """Messages the caller's prompt adds after the messages to summarize."""

    @property
    def _llm_type(self) -> str:
        return "fake-summary-chat-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        n = max(0, len(messages) - self.instructions)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=fake_summary(n)))])
