"""Anchors: the concrete things a continued session needs from its past, extracted from text
by fixed patterns that know nothing of any compared system.

Five kinds: file paths, identifiers (snake_case, camelCase, CamelCase with an inner capital),
error lines, numbers of three digits or more, and what the user asked (the opening words of
each message a person wrote: see :func:`person_messages`). An anchor is retained when it still
occurs, word for word up to whitespace, anywhere in the compacted history: in a kept message,
a summary, or a tool call's arguments.

Tool output is most of a coding session's text, and much of it (a listed file, a build log)
names things nobody acts on. So each anchor is also marked *salient* when the conversation
itself refers to it: a person wrote it, or the model wrote it in its text or a tool call's
arguments. A tool's output that an agent's harness sends back as a user turn (SWE-agent,
OpenHands' argument errors, Codex's AGENTS.md) is tool output, not something a person wrote.
Both shares are reported.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from benchmarks.compare.inputs import leading_system

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from benchmarks.compare.systems import Items

KINDS = ("path", "identifier", "error", "number", "request")

_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,5}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|rs|go|java|c|h|cc|cpp|md|json|toml|yaml|yml|txt"
    r"|csv|sh|pony|cfg|ini|lock|html|css|sql|rb)\b"
)
_IDENT = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"
    r"|\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b"
    r"|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"
)
_ERROR = re.compile(r"Error|Exception|Traceback|FAILED|\bfailed\b|\berror\b|panic")
_NUMBER = re.compile(r"(?<![\w.])\d{3,}(?:\.\d+)?(?!\w|\.\d)")
_SPACE = re.compile(r"\s+")
_RUN = re.compile(r"[\w@+.~/-]+")
_RUN_CHARS = 512
_NAME_CHARS = 128
_REQUEST_CHARS = 60
_ERROR_CHARS = 80
_NOT_A_PERSON = re.compile(
    r"\A\s*(?:"
    r"Stop hook feedback:"  # Claude Code: a stop hook's output
    r"|Parameter '[^']*' is expected to be one of"  # OpenHands: a tool's argument error
    r"|# AGENTS\.md instructions for"  # Codex: the project's instruction file, sent by Codex
    r"|Here is a demonstration of how to correctly accomplish this task"  # SWE-agent's demo
    r"|<synopsis-summary"  # synopsis's summary (others' are never transcript messages)
    r")"
)
"""User messages that the agent's harness wrote, not a person: feedback and injected context."""


def _blob(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) > _RUN_CHARS or any(len(name) > _NAME_CHARS for name in run.split("/")):
        return " "
    return run


def paths(text: str) -> set[str]:
    """The file paths of ``text``; none from inside a path-shaped run longer than any real
    path (a minified bundle's names run together, an encoded blob): 13,000 characters
    without a space are not a file a session worked on."""
    return set(_PATH.findall(_RUN.sub(_blob, text)))


def squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _arguments(raw: Any) -> str:
    """A call's arguments as the model meant them: JSON decoded (so that the ``\\n`` escape
    before "Project" does not make an identifier "nProject"), each key and value on its own
    line; anything that is not JSON, as it is."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return str(raw)
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, inner in node.items():
                out.append(str(key))
                walk(inner)
        elif isinstance(node, list):
            for inner in node:
                walk(inner)
        elif node is not None:
            out.append(str(node))

    walk(value)
    return "\n".join(out)


def text_of(item: dict[str, Any]) -> str:
    """Everything a message says: its text parts, tool names and arguments."""
    out: list[str] = []
    content = item.get("content")
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        out.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    for call in item.get("tool_calls") or ():
        function = call.get("function") or {}
        out.append(str(function.get("name", "")))
        out.append(_arguments(function.get("arguments", "")))
    return "\n".join(out)


def person_messages(items: Items, *, observations_in_user_turns: bool = False) -> list[int]:
    """Indices of the user messages a person wrote: not a summary, not a tool observation,
    not feedback or context the harness injected (:data:`_NOT_A_PERSON`). Where the agent's
    observations come back as user turns (SWE-agent's text actions), every user message after
    the first assistant message is one."""
    out = []
    seen_assistant = False
    for i, item in enumerate(items):
        role = item.get("role")
        if role == "assistant":
            seen_assistant = True
        if role != "user" or (observations_in_user_turns and seen_assistant):
            continue
        text = text_of(item)
        if squash(text) and not _NOT_A_PERSON.match(text):
            out.append(i)
    return out


def _person(item: dict[str, Any]) -> bool:
    return item.get("role") == "user" and not _NOT_A_PERSON.match(text_of(item))


def extract(
    items: Iterable[dict[str, Any]], person: Callable[[dict[str, Any]], bool] = _person
) -> dict[str, set[str]]:
    """The anchors of ``items``, by kind; ``person`` tells which of them a person wrote (by
    default every user message the harness did not write)."""
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for item in items:
        text = text_of(item)
        found["path"].update(paths(text))
        found["identifier"].update(_IDENT.findall(text))
        found["number"].update(_NUMBER.findall(text))
        for line in text.splitlines():
            if _ERROR.search(line) and len(line.strip()) > 8:
                found["error"].add(squash(line)[:_ERROR_CHARS])
        if person(item) and squash(text):
            found["request"].add(squash(text)[:_REQUEST_CHARS])
    return found


def segment(items: Items, keep_tokens: int, count: Any) -> tuple[Items, Items, Items]:
    """``items`` as (system prompt, the older part every system must summarize, the recent
    tail that fits in ``keep_tokens``). ``count`` counts one message's tokens."""
    start = leading_system(items)
    cut, used = len(items), 0
    while cut > start:
        cost = count(items[cut - 1])
        if used + cost > keep_tokens:
            break
        used += cost
        cut -= 1
    return items[:start], items[start:cut], items[cut:]


def targets(
    items: Items, keep_tokens: int, count: Any, *, observations_in_user_turns: bool = False
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The anchors only the summarized segment holds (not in the system prompt, which every
    system keeps, nor in the tail, which every system is told to keep), all and salient (in
    what a person or the model wrote)."""
    system, older, tail = segment(items, keep_tokens, count)
    people = {
        id(items[i])
        for i in person_messages(items, observations_in_user_turns=observations_in_user_turns)
    }

    def person(item: dict[str, Any]) -> bool:
        return id(item) in people

    have = extract(older, person)
    free = extract([*system, *tail], person)
    spoken = extract((i for i in older if person(i) or i.get("role") == "assistant"), person)
    every = {kind: have[kind] - free[kind] for kind in KINDS}
    return every, {kind: every[kind] & spoken[kind] for kind in KINDS}


def retained(anchors: dict[str, set[str]], output: Items) -> dict[str, int]:
    """How many of each kind of anchor occur in ``output``."""
    text = squash("\n".join(text_of(i) for i in output))
    return {kind: sum(1 for a in anchors[kind] if squash(a) in text) for kind in KINDS}


def message_key(item: dict[str, Any]) -> str:
    """What makes two messages the same, word for word: role, text, tool calls (id, name,
    arguments) and the call a result answers. Content ``None`` and ``""`` are the same text,
    and a list of text parts is its joined text, as the systems' conversions hand them back."""
    calls = [
        (
            c.get("id"),
            (c.get("function") or {}).get("name"),
            (c.get("function") or {}).get("arguments"),
        )
        for c in item.get("tool_calls") or ()
    ]
    text = text_of({"content": item.get("content")})
    return json.dumps([item.get("role"), text, calls, item.get("tool_call_id")])
