"""What a model's summary must keep of the rule summary, and how what it left out is added."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import given
from hypothesis import strategies as st

from synopsis.summarizers import (
    Entities,
    Facets,
    RuleBasedSummarizer,
    Sections,
    SummaryRecord,
    render,
)
from synopsis.summarizers.llm.gaps import (
    PROBE_CHARS,
    Fact,
    _cap,
    _with,
    fill_in,
    kept,
    wanted,
    with_facts,
)
from synopsis.tokens import counter_for_model
from tests.strategies import any_history, valid_history
from tests.summarizers.helpers import TRANSCRIPTS, load, say, user

if TYPE_CHECKING:
    from synopsis.messages import Message

COUNTER = counter_for_model("gpt-4o")


def measure(record: SummaryRecord) -> int:
    return max(COUNTER.count_text(render(record, style=s)) for s in ("sections", "snapshot"))


def rules(messages: list[Message] | tuple[Message, ...], budget: int = 2000) -> SummaryRecord:
    return RuleBasedSummarizer(max_summary_tokens=budget, model_for_counting="gpt-4o").summarize(
        messages
    )


def model_record(**content: Any) -> SummaryRecord:
    return SummaryRecord(narrative="The person asked for help; the agent looked.", **content)


LONG = (
    "I need to downgrade all of these reservations to economy. It has been a tough time "
    "financially, and I just need to save where I can, without changing the flights or "
    "the passengers on any of them, please."
)


def test_the_facts_are_the_rule_summarys_most_important_first():
    messages = [
        user("Move reservation JG7FMM for user sophia_silva_7557 to economy."),
        say("Looking at src/fares/rules.py for the fare_class table."),
        user("Never change the passengers."),
        user(LONG),
    ]
    facts = wanted(rules(messages))
    kinds = [f.kind for f in facts]
    assert kinds == sorted(kinds, key=["first request", "constraint", "request", "path",
                                       "identifier"].index)  # fmt: skip
    assert facts[0] == Fact("first request", messages[0].text)
    assert Fact("constraint", "Never change the passengers.") in facts
    # Requests newest first; a long one by its opening, cut at a word past the probe.
    (long,) = [f for f in facts if f.kind == "request" and f.text.startswith("I need")]
    assert long.text.endswith("…")
    assert LONG.startswith(long.text.removesuffix("…"))
    assert PROBE_CHARS < len(long.text) <= 161
    assert long.probe == LONG[:PROBE_CHARS]
    assert Fact("path", "src/fares/rules.py") in facts
    assert {Fact("identifier", "JG7FMM"), Fact("identifier", "sophia_silva_7557")} <= set(facts)
    assert Fact("identifier", "fare_class") in facts
    # The first message is the first request: not wanted twice.
    assert not any(f.kind == "request" and f.text == messages[0].text for f in facts)


def test_a_fact_is_kept_word_for_word_paths_and_identifiers_exactly():
    record = model_record(
        key_points=("Moved   reservation JG7FMM for user\nsophia_silva_7557 to economy today",)
    )
    request = Fact("request", "Moved reservation JG7FMM for user sophia_silva_7557 to economy")
    facts = [request, Fact("identifier", "JG7FMM"), Fact("identifier", "jg7fmm")]
    assert kept(facts, record) == facts[:2]
    assert str(request) == f"request: {request.text}"


def test_added_facts_go_where_the_rules_keep_them():
    own = model_record(
        sections=Sections(
            primary_request=("The person wants a cheaper fare",),
            user_messages=("the model's request",),
        ),
        facets=Facets(entities=Entities(symbols=("s_1",))),
    )
    facts = [
        Fact("first request", "Downgrade my flights"),
        Fact("constraint", "Never change the passengers."),
        Fact("request", "the newest request"),
        Fact("request", "an older request"),
        Fact("path", "src/fares.py"),
        Fact("identifier", "JG7FMM"),
    ]
    out = with_facts(own, facts)
    assert out.sections.primary_request == (
        "Downgrade my flights",
        "The person wants a cheaper fare",
    )
    assert out.sections.constraints == ("Never change the passengers.",)
    assert out.sections.user_messages == (
        "the model's request",
        "an older request",
        "the newest request",
    )
    assert out.facets.entities.files == ("src/fares.py",)
    assert out.facets.entities.symbols == ("s_1", "JG7FMM")
    assert out.added == tuple(f.text for f in facts)
    assert with_facts(own, []) is own
    SummaryRecord.model_validate_json(out.model_dump_json())  # still a valid record


def test_within_a_cap_an_added_item_outranks_the_models_own():
    model = ["m1", "m2", "m3", "m4"]
    assert _with(model, ["a", "b"], 5) == ("m1", "m2", "m3", "a", "b")
    assert _with(model, ["a", "b"], 5, first=True) == ("a", "b", "m1", "m2", "m3")
    # Newest first in importance, oldest first in the list; the model's oldest give way.
    assert _with(model, ["new", "old"], 5, newest=True) == ("m2", "m3", "m4", "old", "new")
    assert _with(model, ["a", "b", "c"], 2) == ("a", "b")
    assert _cap(Sections, "user_messages") >= 50
    assert _cap(Entities, "symbols") >= 50


def test_what_the_model_kept_is_not_added():
    messages = [user("Move reservation JG7FMM to economy, please."), say("Done: JG7FMM moved.")]
    facts = wanted(rules(messages))
    record = model_record(sections=Sections(primary_request=(messages[0].text,)))
    filled = fill_in(record, facts, measure, 2000)
    assert filled.added == ()
    assert filled.left_out == ()
    assert filled.record == record


def test_the_models_content_gives_way_to_the_facts():
    messages = [user(LONG), say("Checking reservation JG7FMM and H8Q05L.")]
    facts = wanted(rules(messages))
    wordy = model_record(key_points=tuple(f"Point {i}: the agent read more." for i in range(30)))
    budget = measure(with_facts(model_record(), facts)) + 40
    filled = fill_in(wordy, facts, measure, budget)
    assert measure(filled.record) <= budget
    assert filled.record.truncated
    assert set(filled.added) == set(facts) - set(kept(facts, wordy))
    assert kept(facts, filled.record) == list(facts)
    assert filled.left_out == ()
    assert 0 < len(filled.record.key_points) < 30


def test_facts_over_the_budget_go_least_important_first():
    facts = [
        Fact("first request", "Downgrade every reservation to economy"),
        Fact("constraint", "Never change the passengers."),
        *(Fact("identifier", f"RES{i:03d}X") for i in range(40)),
    ]
    frame = model_record().model_copy(update={"narrative": ""})
    budget = measure(with_facts(frame.model_copy(update={"truncated": True}), facts[:12]))
    filled = fill_in(model_record(), facts, measure, budget)
    assert measure(filled.record) <= budget
    assert filled.record.truncated
    assert list(filled.added) == facts[: len(filled.added)]
    assert 2 < len(filled.added) < len(facts)
    assert list(filled.left_out) == facts[len(filled.added) :]


def test_identifiers_a_request_added_already_quotes_are_not_added_again():
    facts = [
        Fact("request", "Move reservation JG7FMM for sophia_silva_7557"),
        Fact("identifier", "JG7FMM"),
        Fact("identifier", "H8Q05L"),
    ]
    filled = fill_in(model_record(), facts, measure, 2000)
    assert filled.added == (facts[0], facts[2])
    assert filled.left_out == ()


def test_on_the_taubench_session_a_bare_summary_keeps_what_the_rules_keep():
    messages = load(next(p for p in TRANSCRIPTS if "taubench-airline-task2" in p.name))[1:50]
    reference = rules(messages, 800)
    facts = wanted(reference)
    assert facts[0].kind == "first request"
    assert {"omar_davis_3817", "JG7FMM"} <= {f.text for f in facts if f.kind == "identifier"}
    filled = fill_in(model_record(), facts, measure, 800)
    assert filled.left_out == ()
    assert measure(filled.record) <= 800
    assert kept(facts, filled.record) == list(facts)


MODEL_TEXT = st.text(max_size=80)
CONTENT = st.fixed_dictionaries(
    {
        "narrative": MODEL_TEXT.filter(str.strip),
        "key_points": st.lists(MODEL_TEXT, max_size=8).map(tuple),
    }
)


@given(
    st.one_of(any_history(), valid_history()),
    CONTENT,
    st.integers(min_value=150, max_value=2_000),
)
def test_a_filled_summary_keeps_every_fact_the_budget_holds(
    history: list[Message], content: dict[str, Any], budget: int
) -> None:
    facts = wanted(rules(history, budget))
    filled = fill_in(SummaryRecord(**content), facts, measure, budget)
    assert measure(filled.record) <= budget
    have = kept(facts, filled.record)
    assert [f for f in facts if f not in have] == list(filled.left_out)
    assert set(filled.added) <= set(facts)
    # The rules kept every fact within this budget; the facts alone fit it too (the section
    # they are shown in costs a line more than the rules' own): none is left out.
    alone = with_facts(SummaryRecord(truncated=True), facts)
    if measure(alone) <= budget:
        assert filled.left_out == ()


def test_a_rule_summary_with_nothing_in_it_wants_nothing():
    assert wanted(SummaryRecord()) == ()


def test_a_record_is_marked_cut_when_a_fact_did_not_fit_even_if_its_own_content_did():
    short = Fact("first request", "Downgrade my flights")
    long = Fact("request", " ".join(f"refund reservation R{i}X9 to card C{i}Z7" for i in range(4)))
    budget = measure(with_facts(SummaryRecord(narrative="ok"), [short]))
    # Even with nothing else in it, and no closing advice, the record cannot hold both.
    assert measure(with_facts(SummaryRecord(truncated=True), [short, long])) > budget
    filled = fill_in(SummaryRecord(narrative="ok"), [short, long], measure, budget)
    assert filled.record.narrative == "ok"
    assert filled.added == (short,)
    assert filled.left_out == (long,)
    assert filled.record.truncated


def test_more_facts_than_a_list_holds_keep_the_most_important_and_name_only_those():
    cap = _cap(Sections, "user_messages")
    newest_first = [Fact("request", f"request {i:06d}") for i in range(cap + 20, 0, -1)]
    out = with_facts(model_record(), newest_first)
    users = out.sections.user_messages
    assert users == tuple(f"request {i:06d}" for i in range(21, cap + 21))  # oldest first
    assert set(out.added) == set(users)
