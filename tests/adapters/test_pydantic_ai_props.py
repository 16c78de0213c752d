"""Property: compacting any pydantic-ai history and mapping it back gives pydantic-ai messages
that pydantic-ai's Anthropic model maps to a request Anthropic accepts, that round-trip
through pydantic-ai's own serializer, and whose kept messages are the very objects given."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai import messages as pm

from synopsis.adapters.pydantic_ai import SynopsisCapability
from tests.adapters.test_pydantic_ai import context, run
from tests.adapters.test_pydantic_ai_agent import anthropic_problems

_WORDS = st.sampled_from(["build", "test", "fail", "pass", "module", "error", "fix", "ok"])
_TEXT = st.lists(_WORDS, min_size=1, max_size=80).map(" ".join)


@st.composite
def histories(draw: st.DrawFn) -> list[pm.ModelMessage]:
    """A conversation between turns: a task, then turns of a response (text, thinking, tool
    calls) and the request answering it (the calls' returns, or a new prompt)."""
    out: list[pm.ModelMessage] = [
        pm.ModelRequest(parts=[pm.SystemPromptPart("Be brief."), pm.UserPromptPart(draw(_TEXT))])
    ]
    calls = 0
    for _ in range(draw(st.integers(3, 16))):
        parts: list[pm.ModelResponsePart] = []
        if draw(st.booleans()):
            parts.append(pm.ThinkingPart(draw(_TEXT), signature=f"sig{calls}"))
        parts.append(pm.TextPart(draw(_TEXT)))
        ids = [f"c{calls + k}" for k in range(draw(st.integers(0, 2)))]
        calls += len(ids)
        parts += [pm.ToolCallPart("bash", {"cmd": draw(_TEXT)}, i) for i in ids]
        out.append(
            pm.ModelResponse(
                parts=parts, model_name="m", provider_response_id=ids[0] if ids else None
            )
        )
        if ids:
            returns: list[pm.ModelRequestPart] = [
                pm.ToolReturnPart(
                    "bash",
                    draw(_TEXT),
                    i,
                    outcome=draw(st.sampled_from(["success", "failed"])),
                    metadata={"n": n},
                )
                for n, i in enumerate(ids)
            ]
            out.append(pm.ModelRequest(parts=returns))
            if draw(st.booleans()):
                continue  # the model goes on after the returns
        out.append(pm.ModelRequest(parts=[pm.UserPromptPart(draw(_TEXT))]))
    # A response ends the history, as between two runs; the last request is then the prompt.
    out.append(pm.ModelResponse(parts=[pm.TextPart(draw(_TEXT))]))
    out.append(pm.ModelRequest(parts=[pm.UserPromptPart(draw(_TEXT))]))
    return out


@given(histories(), st.sampled_from([500, 800, 1500]))
def test_compacted_histories_are_pydantic_ais_own(
    history: list[pm.ModelMessage], window: int
) -> None:
    capability: SynopsisCapability[Any] = SynopsisCapability(
        model="claude-sonnet-4-5", context_window=window, reserve_output_tokens=100
    )
    out: list[pm.ModelMessage] = run(capability.processor(context(), list(history)))  # type: ignore[call-arg, arg-type]
    assert all(isinstance(m, pm.ModelRequest | pm.ModelResponse) for m in out)
    assert anthropic_problems(out) == []
    blob = pm.ModelMessagesTypeAdapter.dump_json(out)
    assert pm.ModelMessagesTypeAdapter.validate_json(blob) == out
    given_ids = {id(m) for m in history}
    result = capability.last_result
    assert result is not None
    if not result.compacted:
        assert all(a is b for a, b in zip(out, history, strict=True))
    # Kept messages are the objects given, in their order; the rest is new.
    kept = [m for m in out if id(m) in given_ids]
    positions = [next(n for n, h in enumerate(history) if h is m) for m in kept]
    assert positions == sorted(positions)
    assert out[-1] is history[-1]
    calls = {p.tool_call_id for m in out for p in m.parts if isinstance(p, pm.ToolCallPart)}
    returns = {p.tool_call_id for m in out for p in m.parts if isinstance(p, pm.ToolReturnPart)}
    assert calls == returns
