"""Properties of ``compact`` over any generated history, for every provider profile: the
output is valid and fits, the system prompt stays first, nothing is lost, and compacting the
output again does nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synopsis.compaction import Compactor
from synopsis.messages import Message, Role, content_hash
from synopsis.planning import Keep
from synopsis.stores import MemoryStore
from synopsis.validation import Problem, check, get_profile
from tests.strategies import Style, valid_history

PROVIDERS: dict[Style, list[str]] = {
    "tool": ["openai", "openai-strict", "responses"],
    "user": ["anthropic", "gemini", "responses"],
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Message], str, int]:
    style: Style = draw(st.sampled_from(["tool", "user"]))
    provider = draw(st.sampled_from(PROVIDERS[style]))
    history = draw(valid_history(style, reasoning=provider == "responses"))
    return history, provider, draw(st.integers(0, 6))


def open_end(problems: list[Problem]) -> list[Problem]:
    # The next user turn is the agent's to append (Gemini's conservative G5).
    return [p for p in problems if not p.rule.endswith("G5")]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_any_history_compacts_to_a_valid_history_that_loses_nothing(
    case: tuple[list[Message], str, int],
) -> None:
    history, provider, keep = case
    store = MemoryStore()
    compactor = Compactor(
        context_window=4_000,
        reserve_output_tokens=500,
        keep=Keep.messages(keep),
        provider=provider,
        store=store,
        session_id="p",
        environ={},
    )
    sent = list(history)
    result = compactor.compact(history, format="synopsis", force=True)
    assert history == sent
    out = result.messages
    profile = get_profile(provider)
    assert open_end(check(out, profile)) == []
    assert result.tokens_after <= 4_000 - 500
    if history[0].role is Role.SYSTEM:
        assert out[0] == history[0]
    # Nothing is lost: a message not in the output, word for word, is in the store.
    stored = {m.sha256 for m in store.recall("p")}
    out_texts = "\n".join(m.text for m in out)
    for message in history:
        assert (
            message in out
            or content_hash(message) in stored
            or (message.text and message.text in out_texts)  # merged into a neighbour
            or (message.role is Role.ASSISTANT and not message.text)  # thinking dropped
        )
    again = compactor.compact(out, format="synopsis")
    assert not again.compacted
    assert again.messages == out
