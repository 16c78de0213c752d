"""A deterministic stand-in for an LLM summarizer's model: it answers a summary request with
valid JSON built by reading the prompt, the way a careful model would.

It keeps what the prompt quotes: the previous summary's (or the partial summaries') lists, the
user's messages and first request, the rules the user stated (a later correction replacing the
rule it corrects), paths and identifiers, TODO lines. It never invents anything. Used
in-process as a completion and behind the fake HTTP server, so the contract suite can run the
LLM summarizer's whole path (prompt, parse, fit, chain) without a real model.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from synopsis.summarizers.llm.completion import CompletionRequest, CompletionResponse
from synopsis.summarizers.llm.prompts import render_transcript
from synopsis.summarizers.records import MAX_FACET_ITEMS, MAX_KEY_POINTS, MAX_SECTION_ITEMS
from synopsis.summarizers.scanning import dedupe, scan_text
from synopsis.testing.server import FakeLLMServer, Recorded, Reply, chat_completion

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["EchoServer", "echo_completion", "echo_summary", "echo_text"]

_BLOCK = re.compile(r"^\[(\d+)\] (\w+)(?: \([^)]*\))?:$")
_RULE = re.compile(r"\b(?:never|do not|don't|must|always|only|instead)\b", re.IGNORECASE)
_CORRECTS = re.compile(r"\b(?:instead|actually|now|no longer)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_WORDS = re.compile(r"[a-z][a-z_]{3,}")
_PLAIN = frozenset({"never", "must", "always", "only", "instead", "actually", "longer", "please"})


def _between(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    end = text.rfind(f"</{tag}>")
    if start < 0 or end < start:
        return None
    return text[start + len(tag) + 2 : end]


def _objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text`` that parses (a truncated one is skipped)."""
    decoder = json.JSONDecoder()
    index = text.find("{")
    while index >= 0:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            yield value
        index = text.find("{", end)


def _users(transcript: str, *, typed: bool = False) -> list[str]:
    """The user blocks' text; ``typed``: only the blocks a person typed, none that carries a
    tool result."""
    users: list[str] = []
    current: list[str] | None = None
    for line in transcript.splitlines():
        match = _BLOCK.match(line)
        if match:
            if current:
                users.append(" ".join(current))
            current = [] if match.group(2) == "user" else None
        elif typed and current is not None and line.startswith("  result of "):
            current = None
        elif current is not None and line.strip():
            current.append(line.strip())
    if current:
        users.append(" ".join(current))
    return users


def _topic(rule: str) -> set[str]:
    return set(_WORDS.findall(rule.lower())) - _PLAIN


def _rules(earlier: Sequence[str], users: Sequence[str]) -> list[str]:
    """The rules the user stated, oldest first, after the earlier summaries' own: a rule that
    says it corrects something replaces the earlier rules that share a word with it."""
    rules = list(earlier)
    for message in users:
        for sentence in _SENTENCE.split(message):
            if not _RULE.search(sentence):
                continue
            if _CORRECTS.search(sentence):
                rules = [r for r in rules if not _topic(r) & _topic(sentence)]
            rules.append(sentence.strip())
    return dedupe(rules)


def _merged(summaries: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    lists: dict[str, list[Any]] = {}
    for summary in summaries:
        for group in ("sections", "facets"):
            for key, value in (summary.get(group) or {}).items():
                if key == "entities":
                    for kind, items in (value or {}).items():
                        lists.setdefault(f"entities.{kind}", []).extend(items or [])
                elif isinstance(value, list):
                    lists.setdefault(key, []).extend(value)
        lists.setdefault("key_points", []).extend(summary.get("key_points") or [])
    return lists


def echo_summary(text: str) -> dict[str, Any]:
    """The summary JSON for a prompt whose quoted parts are in ``text``."""
    earlier = [
        *_objects(_between(text, "previous_summary") or ""),
        *_objects(_between(text, "partial_summaries") or ""),
    ]
    lists = _merged(earlier)
    transcript = _between(text, "transcript") or ""
    users = _users(transcript)
    found = scan_text(transcript)
    todos = [
        line.split("TODO:", 1)[1].strip() for line in transcript.splitlines() if "TODO:" in line
    ]
    requests = lists.get("primary_request") or users[:1]
    symbols = dedupe([*lists.get("entities.symbols", []), *found.symbols])
    content: dict[str, Any] = {
        "narrative": f"{len(users)} user messages, {len(earlier)} earlier summaries.",
        "key_points": dedupe(lists.get("key_points", []))[:MAX_KEY_POINTS],
        "sections": {
            "primary_request": requests[:1],
            "constraints": _rules(lists.get("constraints", []), _users(transcript, typed=True))[
                -MAX_SECTION_ITEMS:
            ],
            "key_concepts": dedupe([*lists.get("key_concepts", []), *found.symbols])[
                :MAX_SECTION_ITEMS
            ],
            "user_messages": dedupe([*lists.get("user_messages", []), *users])[-MAX_SECTION_ITEMS:],
            "pending_tasks": (todos or lists.get("pending_tasks", []))[:MAX_SECTION_ITEMS],
        },
        "facets": {
            "entities": {
                "files": dedupe([*lists.get("entities.files", []), *found.files])[:MAX_FACET_ITEMS],
                "symbols": symbols[:MAX_FACET_ITEMS],
            }
        },
    }
    return content


def echo_text(turns: Sequence[dict[str, Any]]) -> str:
    """The answer to chat turns (role and string content) holding a summary request."""
    return json.dumps(echo_summary("\n".join(str(t["content"]) for t in turns)))


def echo_completion(request: CompletionRequest) -> CompletionResponse:
    """A completion for :class:`~synopsis.summarizers.llm.LLMSummarizer` that answers with
    :func:`echo_summary`; a cache-aligned request's conversation is read as a transcript."""
    turns: list[dict[str, Any]] = [
        {"role": m["role"], "content": m["content"]} for m in request.messages
    ]
    if request.conversation:
        quoted = render_transcript(request.conversation)
        turns[0] = {"role": "user", "content": f"{quoted}\n{turns[0]['content']}"}
    return CompletionResponse(echo_text(turns), model=request.model)


def _echo_reply(recorded: Recorded) -> Reply:
    """The echo model's answer to a Chat Completions request, read as it came over HTTP (the
    system message aside)."""
    body = recorded.body
    turns = [m for m in body["messages"] if m["role"] != "system"]
    return Reply(chat_completion(echo_text(turns), model=body["model"]))


class EchoServer(FakeLLMServer):
    """The fake server with the echo model behind ``/v1/chat/completions``: a request is
    answered with a scripted reply while any is left, else by the echo model."""

    def __init__(self) -> None:
        super().__init__(default=_echo_reply)
