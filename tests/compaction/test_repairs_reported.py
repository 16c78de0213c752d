"""A repaired history is never repaired silently: every fix is an event, in the caller's own
positions."""

from __future__ import annotations

import synopsis


def test_a_repair_is_an_event_naming_the_callers_message() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "gone", "content": "orphaned output"},
        {"role": "assistant", "content": "hello"},
    ]
    result = synopsis.compact(history, format="openai")
    (fix,) = result.fixes
    assert fix.index == 1
    (event,) = (e for e in result.events if isinstance(e, synopsis.HistoryRepaired))
    assert event.fixes == (str(fix),)
    assert "message 1" in event.message
    assert "repaired (1 fix)" in event.message
    assert len(result.messages) == 2


def test_with_a_system_prompt_apart_the_index_is_still_the_callers() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "gone"}]},
        {"role": "assistant", "content": "hello"},
    ]
    result = synopsis.compact(history, format="anthropic", system="Be brief.")
    assert result.fixes
    assert {f.index for f in result.fixes} <= {0, 1, 2, None}
    assert any(f.index == 1 for f in result.fixes)
    (event,) = (e for e in result.events if isinstance(e, synopsis.HistoryRepaired))
    assert len(event.fixes) == len(result.fixes)


def test_many_repairs_are_counted_and_the_first_named() -> None:
    history = [{"role": "user", "content": "hi"}]
    for i in range(5):
        history.append({"role": "tool", "tool_call_id": f"gone{i}", "content": "x"})
    history.append({"role": "assistant", "content": "hello"})
    result = synopsis.compact(history, format="openai")
    (event,) = (e for e in result.events if isinstance(e, synopsis.HistoryRepaired))
    assert "(5 fixes)" in event.message
    assert event.message.endswith("; …")
    assert event.to_dict()["event"] == "history_repaired"
