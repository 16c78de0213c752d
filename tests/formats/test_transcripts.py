"""The bundled real transcripts (OpenAI chat format): exact round trip through openai_chat, and
every tool exchange kept when converted to Anthropic, Responses and Gemini and decoded again."""

from __future__ import annotations

import json
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from synopsis.formats import anthropic, detect, gemini, openai_chat, responses
from synopsis.formats._common import arguments_mapping
from synopsis.messages import Message, Role, ToolCallPart, ToolResultPart

if TYPE_CHECKING:
    from collections.abc import Sequence

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)

pytestmark = pytest.mark.skipif(not TRANSCRIPTS, reason="examples/transcripts is not present")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def calls(messages: Sequence[Message]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (p.call_id, p.name, arguments_mapping(p))
        for m in messages
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


def results(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [(p.call_id, p.text) for m in messages for p in m.parts if isinstance(p, ToolResultPart)]


def pairing(messages: Sequence[Message]) -> list[int]:
    """For each result, the ordinal of the call it answers: the nearest call with its id that is
    still open (ids are reused across turns in real data), or -1."""
    open_calls: list[tuple[int, str]] = []
    ordinal = 0
    out: list[int] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                open_calls.append((ordinal, p.call_id))
                ordinal += 1
            elif isinstance(p, ToolResultPart):
                match = next((c for c in reversed(open_calls) if c[1] == p.call_id), None)
                if match is not None:
                    open_calls.remove(match)
                out.append(match[0] if match else -1)
    return out


@pytest.fixture(params=TRANSCRIPTS, ids=lambda p: p.stem)
def transcript(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    path: Path = request.param
    return load(path)


def test_transcript_round_trips_exactly(transcript: list[dict[str, Any]]) -> None:
    assert detect(transcript) == "openai"
    decoded = openai_chat.decode(transcript)
    assert len(decoded) == len(transcript)
    assert openai_chat.encode(decoded).messages == transcript


def test_anthropic_keeps_every_tool_exchange(transcript: list[dict[str, Any]]) -> None:
    model = openai_chat.decode(transcript)
    wire = anthropic.encode(model)
    back = anthropic.decode(json.loads(json.dumps(wire.messages)), system=wire.system)
    assert calls(back) == calls(model)
    assert results(back) == results(model)
    # leading system and developer messages went to the top-level system prompt
    lead = [m.text for m in takewhile(lambda m: m.role in (Role.SYSTEM, Role.DEVELOPER), model)]
    assert wire.system == (
        lead[0] if len(lead) == 1 else [{"type": "text", "text": t} for t in lead] or None
    )
    assert [m.text for m in back if m.role is Role.SYSTEM] == (["\n".join(lead)] if lead else [])


def test_responses_keeps_every_tool_exchange(transcript: list[dict[str, Any]]) -> None:
    model = openai_chat.decode(transcript)
    back = responses.decode(json.loads(json.dumps(responses.encode(model).messages)))
    assert calls(back) == calls(model)
    assert results(back) == results(model)
    # the text arguments OpenAI sent go through untouched
    sent = [p.arguments for m in model for p in m.parts if isinstance(p, ToolCallPart)]
    assert [p.arguments for m in back for p in m.parts if isinstance(p, ToolCallPart)] == sent


def test_gemini_with_ids_keeps_every_tool_exchange(transcript: list[dict[str, Any]]) -> None:
    model = openai_chat.decode(transcript)
    wire = gemini.encode(model, call_ids=True)
    back = gemini.decode(json.loads(json.dumps(wire.messages)), system=wire.system)
    assert calls(back) == calls(model)
    assert results(back) == results(model)


def test_gemini_without_ids_keeps_names_arguments_results_and_pairing(
    transcript: list[dict[str, Any]],
) -> None:
    model = openai_chat.decode(transcript)
    wire = gemini.encode(model)
    inner = [
        v
        for c in wire.messages
        for part in c["parts"]
        for k, v in part.items()
        if k.startswith("function")
    ]
    assert not any("id" in v for v in inner)  # no call ids written
    back = gemini.decode(json.loads(json.dumps(wire.messages)), system=wire.system)
    assert [c[1:] for c in calls(back)] == [c[1:] for c in calls(model)]
    assert [r[1] for r in results(back)] == [r[1] for r in results(model)]
    assert pairing(back) == pairing(model)


def test_transcripts_cover_real_tool_use() -> None:
    total = sum(len(calls(openai_chat.decode(load(p)))) for p in TRANSCRIPTS)
    assert total > 200
