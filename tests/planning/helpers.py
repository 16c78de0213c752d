"""Small builders for planner tests: histories in the model, token counts per message."""

from __future__ import annotations

from synopsis.messages import Message, ReasoningPart, Role, TextPart, ToolCallPart, ToolResultPart


def system(text: str = "You are a coding agent.") -> Message:
    return Message(Role.SYSTEM, (TextPart(text),))


def user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def say(text: str) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),))


def calls(*ids: str, name: str = "bash", args: str = '{"cmd": "ls"}') -> Message:
    return Message(Role.ASSISTANT, tuple(ToolCallPart(i, name, args) for i in ids))


def result(call_id: str, text: str = "ok") -> Message:
    return Message(Role.TOOL, (ToolResultPart(call_id, text),))


def reasoning() -> Message:
    return Message(Role.ASSISTANT, (ReasoningPart("plan", encrypted="enc"),))


def summary(text: str = "summary of earlier conversation") -> Message:
    return Message(Role.USER, (TextPart(text),))


def ones(messages: list[Message], size: int = 10) -> list[int]:
    return [size] * len(messages)
