"""The clearing tier through a compaction: placeholders that say what was there and how to get
it back, originals in the store, the same output for a client that resends its history, and
summaries only when clearing cannot reach the target."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import synopsis
from synopsis import CompactionCompleted, CompactionSkipped, Compactor
from synopsis.compaction.clearing import placeholder_text
from synopsis.messages import ToolCallPart, ToolResultPart
from synopsis.planning import CLEARED_MARKER
from synopsis.stores import handle_recall
from synopsis.testing import ScriptedSummarizer, conversation
from tests.compaction.test_projection import replay, transcript

CLEARED = re.compile(re.escape(CLEARED_MARKER) + r" the output of (\S+)")
RECALL = re.compile(r'recall_history with (\{"ids": \["[^"]+"\]\}) brings it back')


def placeholders(messages: list[Any]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m.get("role") == "tool" and str(m.get("content", "")).startswith(CLEARED_MARKER)
    ]


def completed(events: list[synopsis.Event]) -> list[CompactionCompleted]:
    return [e for e in events if isinstance(e, CompactionCompleted)]


def big_session(turns: int = 12, chars: int = 6000) -> list[dict[str, Any]]:
    return conversation(turns, result_chars=chars)


def test_old_outputs_give_way_to_placeholders_that_recall_their_originals() -> None:
    events: list[synopsis.Event] = []
    summarizer = ScriptedSummarizer()
    compactor = Compactor(
        model="gpt-4o",
        context_window=24_000,
        strategy="clear",
        store="memory",
        session_id="s",
        summarizer=summarizer,
        listeners=[events.append],
        environ={},
    )
    history = big_session()
    result = compactor.compact(history)
    assert result.compacted
    assert summarizer.calls == []
    assert result.tokens_after <= result.tokens_before
    found = placeholders(result.messages)
    assert found
    # Everything else is as it was: every request, answer and call, in place.
    assert len(result.messages) == len(history)
    same = [m for m in result.messages if m.get("role") != "tool"]
    assert same == [m for m in history if m.get("role") != "tool"]
    # The newest three outputs are whole; the cleared ones are the oldest.
    outputs = [m["content"] for m in result.messages if m.get("role") == "tool"]
    assert outputs[-3:] == [m["content"] for m in history if m.get("role") == "tool"][-3:]
    assert outputs[: len(found)] == found
    (done,) = completed(events)
    assert done.cleared == len(found)
    assert done.summarized == 0
    assert done.tokens_cleared > 0
    assert f"{done.cleared} old tool output(s) cleared" in done.message
    for text, original in zip(found, history[3::4], strict=False):
        assert CLEARED.match(text).group(1) == "read_file"  # type: ignore[union-attr]
        assert "File: src/module_" in text
        assert "; ok; 6,0" in text
        ids = json.loads(RECALL.search(text).group(1))  # type: ignore[union-attr]
        recalled = handle_recall(compactor.store, "s", ids)  # type: ignore[arg-type]
        assert json.dumps(original["content"])[1:-1][:200] in recalled


def test_a_failed_command_says_so_with_its_exit_code() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "run the tests"},
    ]
    for k in range(6):
        history += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": "pytest -q"}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{k}",
                "content": f"E   AssertionError in test_{k}\n" * 300 + "exit code: 1",
            },
        ]
    result = synopsis.compact(
        history, model="gpt-4o", context_window=16_000, strategy="clear", environ={}
    )
    (first, *_) = placeholders(result.messages)
    assert "the output of bash (Command: pytest -q | Exit: 1" in first
    assert "; failed; " in first
    assert "not kept]" in first  # no store: nothing to bring it back from


@pytest.mark.parametrize(("stem", "window"), [("ponyc-4588", 8_000), ("codex-compaction", 32_000)])
@pytest.mark.parametrize("strategy", ["clear", "clear,summarize"])
def test_a_resent_history_gets_what_a_kept_one_gets_when_clearing(
    stem: str, window: int, strategy: str
) -> None:
    items = transcript(stem)
    kept_calls, kept, _, _ = replay(items, resend=False, window=window, strategy=strategy)
    sent_calls, sent, events, compacted = replay(
        items, resend=True, window=window, strategy=strategy
    )
    assert sent == kept
    assert sent_calls == kept_calls
    assert not [e for e in events if isinstance(e, synopsis.ChainInvalidated)]
    assert any(e.cleared for e in completed(events))
    # Between compactions what was sent before is sent again, byte for byte: caches hit.
    for before, after, new in zip(sent, sent[1:], compacted[1:], strict=False):
        if not new:
            assert after.startswith(before[:-1])


def test_clearing_first_asks_the_summarizer_less_and_only_when_clearing_cannot_reach() -> None:
    items = transcript("codex-compaction")
    summarize_calls, _, _, _ = replay(items, resend=False, window=32_000)
    both_calls, _, events, _ = replay(
        items, resend=False, window=32_000, strategy="clear,summarize"
    )
    done = completed(events)
    assert both_calls <= summarize_calls
    assert any(e.cleared and not e.summarized for e in done)
    # A compaction that summarized did so because clearing alone could not reach the target.
    assert all(not e.cleared for e in done if e.summarized)


def test_clearing_alone_with_too_little_to_clear_changes_nothing_and_says_why() -> None:
    events: list[synopsis.Event] = []
    history = conversation(10, result_chars=400)  # 1,928 tokens
    result = synopsis.compact(
        history,
        model="gpt-4o",
        context_window=2_000,
        trigger="tokens:1000",
        reserve_output_tokens=0,
        strategy="clear",
        clear_at_least=1_500,
        listeners=[events.append],
        environ={},
    )
    assert not result.compacted
    assert result.messages == history
    (skipped,) = [e for e in events if isinstance(e, CompactionSkipped)]
    assert skipped.reason == "nothing-to-compact"
    freed = re.search(r"clearing old tool outputs would free ([\d,]+) tokens", skipped.detail)
    assert freed is not None
    assert 0 < int(freed.group(1).replace(",", "")) < 1_500
    assert "under the 1,500 worth a change to the cached prefix" in skipped.detail


def test_excluded_tools_keep_their_outputs() -> None:
    history = big_session()
    result = synopsis.compact(
        history,
        model="gpt-4o",
        context_window=24_000,
        strategy="clear",
        clear_exclude_tools="read_file",
        environ={},
    )
    assert not placeholders(result.messages)


def test_a_result_synopsis_made_up_is_not_cleared_and_a_long_gist_is_cut() -> None:
    history = big_session()
    # An old call whose result never came: the repair answers it, and that answer is no
    # caller's message, so there is no original to name.
    history.insert(
        2,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "lost", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            ],
        },
    )
    result = synopsis.compact(
        history,
        model="gpt-4o",
        context_window=24_000,
        strategy="clear",
        store="memory",
        session_id="s",
        environ={},
    )
    answers = [m for m in result.messages if m.get("tool_call_id") == "lost"]
    assert answers
    assert not any(str(m["content"]).startswith(CLEARED_MARKER) for m in answers)
    assert placeholders(result.messages)


def test_a_placeholder_cuts_a_long_gist() -> None:
    call = ToolCallPart("c", "read_file", json.dumps({"path": "deep/" * 80 + "a.py"}))
    text = placeholder_text(call, ToolResultPart("c", "done " * 400), tokens=400, recall="r-c")
    gist = text[text.index("(") + 1 : text.index("); ok;")]
    assert len(gist) == 300
    assert gist.endswith("…")


def test_a_placeholder_lists_what_the_output_named() -> None:
    call = ToolCallPart("c", "bash", json.dumps({"command": "ls -R"}))
    listing = "\n".join(f"src/pkg/module_{k}.py" for k in range(100))
    text = placeholder_text(call, ToolResultPart("c", listing), tokens=900, recall="r-c")
    named = text[text.index("; it named: ") + len("; it named: ") : text.index("; recall_history")]
    paths = named.split(", ")
    assert paths[:3] == ["src/pkg/module_0.py", "src/pkg/module_1.py", "src/pkg/module_2.py"]
    assert 10 < len(paths) < 100  # as many as fit its share, in the order they came
    assert len(named) <= 400
    # A name the gist already gives is not said twice.
    read = ToolCallPart("r", "read_file", json.dumps({"path": "src/app.py"}))
    said = placeholder_text(read, ToolResultPart("r", "see src/app.py"), tokens=4, recall=None)
    assert said.count("src/app.py") == 1


def test_nothing_a_provider_compacted_is_cleared_or_digested() -> None:
    def use(k: int, chars: int) -> list[dict[str, Any]]:
        return [
            {
                "type": "function_call",
                "call_id": f"c{k}",
                "name": "read_file",
                "arguments": json.dumps({"path": f"src/m{k}.py"}),
            },
            {
                "type": "function_call_output",
                "call_id": f"c{k}",
                "output": "\n".join(f"line {k}.{n} of src/m{k}.py" for n in range(chars // 20)),
            },
        ]

    before = [{"role": "user", "content": "start"}, *use(0, 56_000), *use(1, 6_000)]
    packed = {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}
    after = [u for k in range(2, 10) for u in use(k, 6_000)]
    history = [*before, packed, {"role": "user", "content": "go on"}, *after]
    result = synopsis.compact(
        history,
        model="gpt-4o",
        context_window=64_000,
        trigger=0.6,  # 38,400 tokens: the history is over it, and over half of it lies in c0
        strategy="clear",
        format="responses",
        store="memory",
        session_id="s",
        environ={},
    )
    out = result.messages
    assert out[: len(before) + 1] == [*before, packed]
    cleared = [m for m in out if str(m.get("output", "")).startswith(CLEARED_MARKER)]
    assert cleared
    assert all(int(m["call_id"][1:]) >= 2 for m in cleared)


def test_a_structured_output_the_provider_needs_in_its_shape_is_never_cleared() -> None:
    def shot(k: int) -> dict[str, str]:
        # The first is larger than half the trigger (a part digested on its own, if text);
        # the others are identical (an old duplicate referenced, if text).
        page = "https://forms.example/" + " field" * (12_000 if k == 0 else 100)
        return {
            "type": "computer_screenshot",
            "image_url": "data:image/png;base64,QUJD",
            "url": page,
        }

    items: list[dict[str, Any]] = [{"role": "user", "content": "click through the form"}]
    for k in range(8):
        items += [
            {"type": "computer_call", "call_id": f"s{k}", "action": {"type": "screenshot"}},
            {"type": "computer_call_output", "call_id": f"s{k}", "output": shot(k)},
            {
                "type": "function_call",
                "call_id": f"r{k}",
                "name": "read_file",
                "arguments": json.dumps({"path": f"form_{k}.html"}),
            },
            {"type": "function_call_output", "call_id": f"r{k}", "output": f"<input {k}>" * 600},
        ]
    result = synopsis.compact(
        items,
        model="gpt-4o",
        context_window=80_000,
        trigger="tokens:8000",
        strategy="clear",
        clear_at_least=0,
        format="responses",
        environ={},
    )
    out = result.messages
    assert [m for m in out if m.get("type") == "computer_call_output"] == [
        m for m in items if m.get("type") == "computer_call_output"
    ]
    assert any(str(m.get("output", "")).startswith(CLEARED_MARKER) for m in out)
