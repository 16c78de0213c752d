"""Rebuilding a history around its summary: the summary's voice per profile, the merge into the
next user turn, stale thinking dropped for Anthropic, and every rebuilt history valid for its
target, on hand-made cases, on every cut of the bundled transcripts and on generated histories.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.compaction.rebuild import (
    SummaryRole,
    drop_stale_thinking,
    finish,
    summary_for,
    summary_role,
)
from synopsis.formats import FormatName, decode, encode
from synopsis.messages import (
    Message,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_person_message,
    is_summary,
    message_text,
)
from synopsis.planning import analyze
from synopsis.summarizers import Sections, SummaryRecord
from synopsis.validation import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    OPENAI_STRICT,
    PROFILES,
    RESPONSES,
    Profile,
    check,
    repair_messages,
)
from tests.strategies import any_history, valid_history

if TYPE_CHECKING:
    from collections.abc import Sequence

TRANSCRIPTS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "transcripts").glob("*.jsonl")
)
ANTHROPIC_MID = replace(ANTHROPIC, name="anthropic-mid-system", mid_system=True)
ALL_PROFILES = [*PROFILES.values(), ANTHROPIC_MID]
PROFILE_IDS = [p.name for p in ALL_PROFILES]
ROLES: tuple[SummaryRole, ...] = get_args(SummaryRole)
STRICT = [OPENAI_STRICT, GEMINI]
LOOSE = [OPENAI, RESPONSES, ANTHROPIC]


def record(narrative: str = "The user asked for a fix; the agent edited a.py.") -> SummaryRecord:
    return SummaryRecord(
        narrative=narrative,
        sections=Sections(primary_request=("Fix the crash",), next_step="Run the tests"),
    )


def make_summary(profile: Profile = OPENAI, **options: Any) -> Message:
    return summary_for(record(), profile=profile, **options)


def system(text: str = "You are a coding agent.") -> Message:
    return Message(Role.SYSTEM, (TextPart(text),))


def user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def say(text: str) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),))


def think(text: str) -> ReasoningPart:
    return ReasoningPart(text, signature=f"sig-{text}")


def visible_words(messages: Sequence[Message]) -> list[str]:
    """Every word of the text the messages show, thinking left out (merges join with other
    whitespace than ``message_text`` does, so words, not characters, are compared)."""
    out: list[str] = []
    for m in messages:
        shown = replace(m, parts=tuple(p for p in m.parts if not isinstance(p, ReasoningPart)))
        out += message_text(shown).split()
    return out


def thinking_of(messages: Sequence[Message]) -> list[ReasoningPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ReasoningPart)]


# ---------------------------------------------------------------- the summary's voice


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=PROFILE_IDS)
@pytest.mark.parametrize("style", ["sections", "snapshot"])
def test_summary_is_a_user_message_by_default(profile: Profile, style: Any) -> None:
    message = summary_for(record("narrative 🧭 kept"), profile=profile, style=style)
    assert message.role is Role.USER
    assert is_summary(message)
    assert is_person_message(message)
    assert "narrative 🧭 kept" in message.text
    assert "Fix the crash" in message.text
    assert summary_role("auto", profile) is Role.USER


@pytest.mark.parametrize("profile", list(PROFILES.values()), ids=list(PROFILES))
@pytest.mark.parametrize("mid_system", [False, True])
def test_system_voice_only_where_the_profile_allows_it(profile: Profile, mid_system: bool) -> None:
    variant = replace(profile, mid_system=mid_system)
    message = make_summary(variant, role="system")
    # OpenAI-shaped profiles take a system message anywhere; others only with mid_system.
    allowed = mid_system or profile.system == "anywhere"
    expected = Role.SYSTEM if allowed else Role.USER
    assert message.role is expected
    assert summary_role("system", variant) is expected
    assert is_summary(message)
    for other in ("auto", "user", "merge"):
        assert make_summary(variant, role=other).role is Role.USER


def test_styles_differ_but_both_are_summaries() -> None:
    sections = make_summary(style="sections")
    snapshot = make_summary(style="snapshot")
    assert sections.text != snapshot.text
    assert is_summary(sections)
    assert is_summary(snapshot)


@pytest.mark.parametrize("ref", ["offload:abc123", "store://sessions/s-1/0..41", "ref ✓ 日本"])
def test_offload_ref_appears_in_the_summary(ref: str) -> None:
    with_ref = make_summary(offload_ref=ref)
    assert ref in with_ref.text
    assert ref not in make_summary().text
    assert is_summary(with_ref)


def test_summary_in_system_voice_validates_for_a_mid_system_profile() -> None:
    summary = make_summary(ANTHROPIC_MID, role="system")
    history = [system(), user("fix it"), summary, say("on it"), user("and the tests?")]
    out, _ = finish(history, ANTHROPIC_MID, role="system")
    assert check(out, ANTHROPIC_MID) == []
    assert summary in out
    assert check(out, ANTHROPIC) != []  # the same history is not valid without mid_system


# ---------------------------------------------------------------- every cut of real transcripts


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@cache
def transcript(path: Path, fmt: FormatName) -> tuple[Message, ...]:
    messages = decode(_load(path), "openai").messages
    if fmt == "openai":
        return messages
    wire = encode(messages, fmt)
    return decode(json.loads(json.dumps(wire.messages)), fmt, system=wire.system).messages


def head_length(messages: Sequence[Message]) -> int:
    """The leading system messages and the first request."""
    n = 0
    while n < len(messages) and messages[n].role in (Role.SYSTEM, Role.DEVELOPER):
        n += 1
    return n + 1 if n < len(messages) and messages[n].role is Role.USER else n


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=PROFILE_IDS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_every_cut_of_a_transcript_validates(path: Path, profile: Profile) -> None:
    fmt: FormatName = "openai" if profile.family == "openai" else profile.family
    messages = transcript(path, fmt)
    head = head_length(messages)
    structure = analyze(messages)
    # what the whole transcript, repaired, still breaks (Gemini's conservative "end with a
    # user turn", for transcripts that end with an answer): a rebuilt history may not add to it
    whole = check(repair_messages(messages, profile).messages, profile)
    assert all(p.conservative for p in whole)
    baseline = {p.rule for p in whole}
    role: SummaryRole = "system" if profile.mid_system else "auto"
    summary = summary_for(record(), profile=profile, role=role, offload_ref="ref-1")
    cuts = 0
    for boundary in range(head, len(messages) + 1):
        if not structure.is_safe(boundary):
            continue
        cuts += 1
        history = [*messages[:head], summary, *messages[boundary:]]
        for how in (role, "merge"):
            out, _ = finish(history, profile, role=how)
            problems = check(out, profile)
            if not baseline:
                assert problems == [], (boundary, how, problems)
            assert all(p.conservative and p.rule in baseline for p in problems), (boundary, how)
            assert any("ref-1" in m.text for m in out[: head + 1])
    assert cuts > 0


# ---------------------------------------------------------------- merging into the next turn


def strict_history() -> list[Message]:
    return [
        system(),
        user("first request ✓"),
        say("first answer"),
        make_summary(),
        Message(
            Role.USER,
            (TextPart("the next request 😀"),),
            id="turn-2",
            extra={"x_meta": 1},
            wire={"format": "openai", "content": "string"},
        ),
        say("next answer"),
        user("thanks"),
    ]


@pytest.mark.parametrize("profile", STRICT, ids=lambda p: p.name)
def test_strict_profiles_merge_the_summary_with_the_user_turn_after_it(profile: Profile) -> None:
    history = strict_history()
    objects = list(history)
    out, _ = finish(history, profile)
    roles = [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.USER]
    assert [m.role for m in out] == roles
    merged = out[3]
    first_text = next(p for p in merged.parts if isinstance(p, TextPart))
    assert first_text.text.startswith(history[3].text)
    assert is_summary(merged)
    assert "the next request 😀" in merged.text
    assert merged.text.index(history[3].text) < merged.text.index("the next request 😀")
    assert check(out, profile) == []
    # nothing handed in was changed, nor replaced in the caller's list
    assert history == strict_history()
    assert [dict(m.wire) for m in history] == [dict(m.wire) for m in strict_history()]
    assert all(a is b for a, b in zip(history, objects, strict=True))


@pytest.mark.parametrize("profile", LOOSE, ids=lambda p: p.name)
def test_other_profiles_keep_the_summary_as_its_own_turn(profile: Profile) -> None:
    history = strict_history()
    out, fixes = finish(history, profile)
    assert fixes == ()
    assert out == tuple(history)
    assert out[3] is history[3]


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=PROFILE_IDS)
def test_merge_folds_the_summary_into_the_next_real_user_turn(profile: Profile) -> None:
    history = strict_history()
    summary, nxt = history[3], history[4]
    out, _ = finish(history, profile, role="merge")
    assert len(out) == len(history) - 1
    assert summary not in out
    merged = out[3]
    assert merged.role is Role.USER
    assert merged.parts == (*summary.parts, *nxt.parts)
    # the turn stays the caller's turn: its id, fields and notes go back with it
    assert (merged.id, merged.extra, dict(merged.wire)) == (nxt.id, nxt.extra, dict(nxt.wire))
    assert is_summary(merged)
    assert out[4:] == tuple(history[5:])
    assert check(out, profile) == []
    assert history == strict_history()


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=PROFILE_IDS)
def test_merge_keeps_a_summary_with_no_user_turn_after_it(profile: Profile) -> None:
    history = [system(), user("first request"), say("answer"), make_summary()]
    out, _ = finish(history, profile, role="merge")
    assert out[-1] == history[-1]
    assert sum(is_summary(m) for m in out) == 1
    assert check(out, profile) == []


def test_merge_leaves_a_summary_in_system_voice_alone() -> None:
    summary = make_summary(ANTHROPIC_MID, role="system")
    history = [user("go"), say("ok"), user("more"), summary, user("next")]
    out, _ = finish(history, OPENAI, role="merge")
    assert out == tuple(history)


def test_merge_folds_two_summaries_into_the_next_real_user_turn() -> None:
    first, second = make_summary(), summary_for(record("a later part"), profile=OPENAI)
    history = [user("go"), say("ok"), first, second, user("next")]
    out, _ = finish(history, OPENAI, role="merge")
    assert [m.role for m in out] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert out[-1].parts == (*first.parts, *second.parts, *history[-1].parts)


# ---------------------------------------------------------------- stale thinking


def thinking_history() -> list[Message]:
    return [
        system(),
        user("first request"),
        Message(
            Role.ASSISTANT,
            (think("t1"), TextPart("answer one")),
            id="msg_1",
            extra={"x_meta": True},
            wire={"format": "anthropic", "content": "list"},
        ),
        Message(Role.ASSISTANT, (think("t-only"),)),
        say("answer two"),
        user("second request"),
        Message(Role.ASSISTANT, (think("t2"), ToolCallPart("c1", "bash", {"cmd": "ls"}))),
        Message(Role.USER, (ToolResultPart("c1", "a.py"),)),
        Message(Role.ASSISTANT, (think("t3"), TextPart("done"))),
    ]


def test_drop_stale_thinking_removes_only_earlier_turns_thinking() -> None:
    history = thinking_history()
    out = drop_stale_thinking(history)
    # the thinking-only message is dropped, the other keeps its text
    assert len(out) == len(history) - 1
    assert out[2] == replace(history[2], parts=(TextPart("answer one"),))
    assert out[2].id == "msg_1"
    assert dict(out[2].wire) == dict(history[2].wire)
    assert out[2].parts[0] is history[2].parts[1]
    assert out[3] is history[4]
    assert thinking_of(out[:4]) == []
    # the current turn (from the last message a person wrote) stays, object for object; a user
    # message with results only does not start a turn
    assert all(a is b for a, b in zip(out[4:], history[5:], strict=True))
    assert [p.text for p in thinking_of(out)] == ["t2", "t3"]
    assert drop_stale_thinking(out) == out
    assert history == thinking_history()


def test_drop_stale_thinking_leaves_a_history_without_a_person_alone() -> None:
    history = [
        Message(Role.ASSISTANT, (think("t1"), TextPart("hello"))),
        Message(Role.ASSISTANT, (think("t2"),)),
    ]
    out = drop_stale_thinking(history)
    assert all(a is b for a, b in zip(out, history, strict=True))
    assert len(out) == 2


def test_a_summary_does_not_start_a_turn() -> None:
    history = [
        user("request"),
        Message(Role.ASSISTANT, (think("t1"), ToolCallPart("c1", "bash", "{}"))),
        Message(Role.USER, (ToolResultPart("c1", "ok"),)),
        make_summary(),
        Message(Role.ASSISTANT, (think("t2"), TextPart("done"))),
    ]
    out = drop_stale_thinking(history)
    assert all(a is b for a, b in zip(out, history, strict=True))


def test_finish_drops_stale_thinking_for_anthropic_only() -> None:
    history = thinking_history()
    anthropic, _ = finish(history, ANTHROPIC)
    assert [p.text for p in thinking_of(anthropic)] == ["t2", "t3"]
    assert anthropic == drop_stale_thinking(history)
    assert check(anthropic, ANTHROPIC) == []
    for profile in (OPENAI, RESPONSES):
        kept, _ = finish(history, profile)
        assert [p.text for p in thinking_of(kept)] == ["t1", "t-only", "t2", "t3"]
        assert kept == tuple(history)


def test_merge_then_anthropic_still_drops_stale_thinking() -> None:
    history = [
        user("first request"),
        Message(Role.ASSISTANT, (think("t1"), TextPart("answer one"))),
        make_summary(ANTHROPIC),
        user("second request"),
        Message(Role.ASSISTANT, (think("t2"), TextPart("answer two"))),
    ]
    plain, _ = finish(history, ANTHROPIC)
    assert [p.text for p in thinking_of(plain)] == ["t2"]
    merged, _ = finish(history, ANTHROPIC, role="merge")
    assert [p.text for p in thinking_of(merged)] == ["t2"]


def last_person(messages: Sequence[Message]) -> int:
    found = [i for i, m in enumerate(messages) if is_person_message(m) and not is_summary(m)]
    return found[-1] if found else -1


@given(st.one_of(valid_history("user"), any_history("user"), valid_history("tool")))
def test_drop_stale_thinking_properties(history: list[Message]) -> None:
    out = drop_stale_thinking(history)
    start = last_person(history)
    current = history[start:] if start >= 0 else history
    # the current turn's messages come back as the very objects
    assert all(a is b for a, b in zip(out[len(out) - len(current) :], current, strict=True))
    # before it: no thinking in assistant messages, nothing left empty by the removal
    earlier = out[: len(out) - len(current)]
    assert not any(m.role is Role.ASSISTANT and m.has_reasoning for m in earlier)
    for m in earlier:
        assert m.parts or m in history  # only messages that were already empty are empty
    # nothing else lost, nothing reordered
    assert visible_words(out) == visible_words(history)
    others = [p for m in out for p in m.parts if not isinstance(p, ReasoningPart)]
    assert others == [p for m in history for p in m.parts if not isinstance(p, ReasoningPart)]
    assert drop_stale_thinking(out) == out


# ---------------------------------------------------------------- generated histories


def kept_thinking(
    kept: Sequence[ReasoningPart], before: Sequence[ReasoningPart], dropping: bool
) -> bool:
    """Whether ``kept`` is ``before`` (the same objects), or, when ``dropping``, a part of it."""
    if dropping:
        return all(any(p is q for q in before) for p in kept)
    return len(kept) == len(before) and all(p is q for p, q in zip(kept, before, strict=True))


def accounted_for(out: Sequence[Message], history: Sequence[Message], thinking: bool) -> bool:
    """Whether ``out`` is ``history`` with some neighbours merged (same role, same words) and,
    when ``thinking``, thinking removed (a message of thinking only dropped)."""
    memo: dict[tuple[int, int], bool] = {}

    def droppable(m: Message) -> bool:
        return (
            thinking
            and m.role is Role.ASSISTANT
            and all(isinstance(p, ReasoningPart) for p in m.parts)
        )

    def same(o: Message, m: Message) -> bool:
        if o is m or o == m:
            return True
        stripped = tuple(p for p in m.parts if not isinstance(p, ReasoningPart))
        return thinking and m.role is Role.ASSISTANT and o == replace(m, parts=stripped)

    def walk(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(out):
            result = all(droppable(m) for m in history[j:])
        else:
            o = out[i]
            result = (j < len(history) and droppable(history[j]) and walk(i, j + 1)) or (
                j < len(history) and same(o, history[j]) and walk(i + 1, j + 1)
            )
            k = j + 2
            while not result and k <= len(history):
                group = history[j:k]
                if any(m.role is not o.role for m in group):
                    break
                result = (
                    visible_words([o]) == visible_words(group)
                    and kept_thinking(thinking_of([o]), thinking_of(group), thinking)
                    and walk(i + 1, k)
                )
                k += 1
        memo[i, j] = result
        return result

    return walk(0, 0)


def test_the_accounting_rejects_lost_moved_or_foreign_messages() -> None:
    history = strict_history()
    assert accounted_for(history, history, thinking=False)
    assert not accounted_for(history[:-1], history, thinking=False)
    assert not accounted_for([history[1], history[0], *history[2:]], history, thinking=False)
    assert not accounted_for([*history[:-1], user("other words")], history, thinking=False)
    merged = Message(Role.USER, (TextPart(f"{history[3].text}\n\n{history[4].text}"),))
    assert accounted_for([*history[:3], merged, *history[5:]], history, thinking=False)
    # a merge only joins neighbours of one role
    across = Message(Role.USER, (TextPart(f"{history[4].text}\n\n{history[5].text}"),))
    assert not accounted_for([*history[:4], across, *history[6:]], history, thinking=False)
    # dropping thinking is accounted for only where asked
    stale = thinking_history()
    dropped = drop_stale_thinking(stale)
    assert accounted_for(dropped, stale, thinking=True)
    assert not accounted_for(dropped, stale, thinking=False)


@st.composite
def summarized(draw: st.DrawFn, profile: Profile) -> list[Message]:
    """A valid history for ``profile`` with a summary right after its head."""
    history = draw(valid_history(profile.result_style, reasoning=profile.family == "responses"))
    head = head_length(history)
    role = draw(st.sampled_from(ROLES))
    text = draw(st.text(alphabet="abc xyz 😀", max_size=20))
    summary = summary_for(record(f"narrative {text}"), profile=profile, role=role)
    return [*history[:head], summary, *history[head:]]


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=PROFILE_IDS)
@given(data=st.data())
def test_finish_only_merges_and_drops_thinking(profile: Profile, data: st.DataObject) -> None:
    history = data.draw(summarized(profile))
    role = data.draw(st.sampled_from(ROLES))
    out, _ = finish(history, profile, role=role)
    # no text lost, none added, none reordered
    assert visible_words(out) == visible_words(history)
    # every message is an input message (the summary among them) or a merge of neighbours
    assert accounted_for(out, history, profile.thinking_rules)
    # the summary is still there, as a message of its own or at the front of a merged one
    summary = history[head_length(history)]
    assert any(summary.text in m.text for m in out)
    assert kept_thinking(thinking_of(out), thinking_of(history), profile.thinking_rules)
    assert [p for p in check(out, profile) if not p.conservative] == []
