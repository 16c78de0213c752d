"""What the LLM summarizer asks for, and what an update carries forward: the real openai SDK
against the fake server, answered by the echo model (or by a scripted answer that forgets)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import openai
import pytest

from synopsis.events import SummaryFilledIn, listening
from synopsis.messages import Message, Role, ToolResultPart
from synopsis.summarizers import LLMSummarizer, RuleBasedSummarizer, Sections, SummaryRecord, render
from synopsis.summarizers.llm.answers import SummaryContent, Update, carry_forward
from synopsis.summarizers.llm.clients import openai_chat_completion
from synopsis.summarizers.llm.gaps import Fact, wanted
from synopsis.summarizers.llm.prompts import UPDATE_INSTRUCTIONS
from synopsis.summarizers.records import MAX_SECTION_ITEMS, Entities, Facets
from synopsis.testing.server import chat_completion
from tests.fakes.echo_model import EchoServer
from tests.summarizers.helpers import call, result, say, user

if TYPE_CHECKING:
    from collections.abc import Iterator

CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
MODEL = "gpt-test"
SOURCE = "".join(f"line {i} of the file: some text the summary need not keep\n" for i in range(150))


@pytest.fixture
def server() -> Iterator[EchoServer]:
    echo = EchoServer()
    echo.start()
    try:
        yield echo
    finally:
        echo.stop()


@pytest.fixture
def client(server: EchoServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        api_key="test", base_url=server.base_url, max_retries=0, timeout=5
    ) as sdk_client:
        yield sdk_client


def summarizer(client: openai.OpenAI, **options: Any) -> LLMSummarizer:
    options.setdefault("abort_on_failure", True)  # a test must not pass by falling back
    return LLMSummarizer(
        openai_chat_completion(client), models=[MODEL], clock=lambda: CLOCK, **options
    )


def first_part() -> list[Message]:
    return [
        user("Port the lexer in src/lexer.rs to the new Token API. Never push to main."),
        call("c1", "read_file", {"path": "src/lexer.rs"}),
        result("c1", SOURCE),
        user("Always use port 8080 for the dev server."),
        say("Understood. TODO: port rule_0 to rule_149"),
    ]


def sent(server: EchoServer, index: int = 0) -> tuple[str, str]:
    """The system prompt and the last user turn of the ``index``-th request, as sent."""
    messages = server.requests[index].body["messages"]
    assert messages[0]["role"] == "system"
    return messages[0]["content"], messages[-1]["content"]


def forgetful(**sections: Any) -> dict[str, Any]:
    """A chat completion whose summary keeps the first request and forgets the rest."""
    content = {
        "narrative": "Porting the lexer.",
        "sections": {"primary_request": ["Port the lexer in src/lexer.rs"], **sections},
    }
    return chat_completion(json.dumps(content), model=MODEL)


# -- what the request asks for ----------------------------------------------------------


def test_the_request_asks_for_every_section_in_order_of_importance(server, client):
    record = summarizer(client).summarize(first_part())
    system, turn = sent(server)
    asks = [
        "1. Requests. sections.primary_request: the person's first request, quoted verbatim",
        "sections.user_messages: every request a person wrote",
        "tool output sent in a user turn (an observation, a command's result) is not a request",
        "2. Constraints and corrections. sections.constraints: every rule, preference and "
        "correction a person stated",
        "When a later message corrects an earlier one, keep only the latest value.",
        "3. Files. sections.files_and_code: every file path read, written, edited, searched or "
        "named, grouped by action",
        "4. Real failures. sections.errors_and_fixes: only real failures",
        'The word "error" in a file name, a dependency, a log level or a search hit is not a '
        "failure.",
        "5. Plan and progress. facets.decisions",
        "sections.pending_tasks: the plan or todo list as it last stood",
        "sections.next_step: the next step",
        "6. Identifiers. facets.entities",
        "Leave a section empty rather than fill it",
    ]
    at = [system.find(ask) for ask in asks]
    assert -1 not in at, [a for a, i in zip(asks, at, strict=True) if i < 0]
    assert at == sorted(at)
    assert "<previous_summary>" not in turn
    assert record.model == MODEL
    assert record.sections.constraints == (
        "Never push to main.",
        "Always use port 8080 for the dev server.",
    )


def test_a_re_compaction_asks_to_update_the_previous_record_section_by_section(server, client):
    llm = summarizer(client)
    first = llm.summarize(first_part())
    second = llm.summarize(
        [user("Now add benchmarks in benches/lex.rs."), say("On it.")], previous=first
    )
    _, turn = sent(server, 1)
    quoted = turn.split("<previous_summary>\n", 1)[1].split("\n</previous_summary>", 1)[0]
    assert json.loads(quoted)["sections"]["constraints"] == list(first.sections.constraints)
    assert UPDATE_INSTRUCTIONS in turn
    for ask in (
        "do not write a fresh one",
        "user_messages: keep every request it lists, then append the new part's requests",
        "constraints: keep every constraint it lists; replace one the new part corrects",
        "keep every file, failure and identifier it lists",
        "pending_tasks, current_work and next_step: update them",
    ):
        assert ask in turn
    assert turn.index("</previous_summary>") < turn.index("<transcript>")
    assert (second.depth, second.parent_id) == (1, first.id)
    assert second.covered_total == len(first_part()) + 2
    assert second.sections.constraints == first.sections.constraints
    assert second.sections.user_messages[-1] == "Now add benchmarks in benches/lex.rs."


# -- what an update carries forward -----------------------------------------------------


def new_part(*said: str) -> list[Message]:
    """People's words, then a long tool result (so that a summary is shorter than its input)."""
    return [
        *(user(text) for text in said),
        call("c9", "read_file", {"path": "benches/lex.rs"}),
        result("c9", SOURCE),
        say("Benchmarks drafted."),
    ]


def test_what_the_answer_forgot_of_the_previous_record_is_put_back(server, client):
    llm = summarizer(client)
    first = llm.summarize(first_part())
    assert first.sections.files_and_code == ()  # the echo model writes none; give it some
    first = first.model_copy(
        update={
            "sections": first.sections.model_copy(
                update={"files_and_code": ("Read: src/lexer.rs", "Edited: src/token.rs")}
            )
        }
    )
    server.add(forgetful(user_messages=["Add benchmarks in benches/lex.rs."]))
    second = llm.summarize(new_part("Add benchmarks in benches/lex.rs."), previous=first)
    assert len(server.requests) == 2  # no second ask: what was put back satisfied the guard
    assert second.model == MODEL
    assert second.sections.constraints == (
        "Never push to main.",
        "Always use port 8080 for the dev server.",
    )
    assert second.sections.user_messages == (
        *first.sections.user_messages,
        "Add benchmarks in benches/lex.rs.",
    )
    assert second.sections.files_and_code == ("Read: src/lexer.rs", "Edited: src/token.rs")
    assert second.facets.entities.files[: len(first.facets.entities.files)] == (
        first.facets.entities.files
    )
    assert second.sections.primary_request == ("Port the lexer in src/lexer.rs",)


def test_a_correction_replaces_the_old_value_and_nothing_brings_it_back(server, client):
    llm = summarizer(client)
    first = llm.summarize(first_part())
    correction = "Actually, use port 9090 for the dev server instead."
    second = llm.summarize(new_part(correction), previous=first)
    assert second.sections.constraints == ("Never push to main.", correction)
    # A model that forgets the old request too: it comes back with the old value marked.
    server.add(forgetful(constraints=[correction]))
    third = llm.summarize(new_part(correction), previous=first)
    assert third.sections.constraints == ("Never push to main.", correction)
    assert "8080" not in " ".join(third.sections.constraints)
    assert third.sections.user_messages[0].startswith("Port the lexer")
    assert "Use port 8080" not in " ".join(third.sections.user_messages)


def test_a_subject_the_person_talked_about_is_left_to_the_answer(server, client):
    llm = summarizer(client)
    first = llm.summarize(first_part())
    server.add(forgetful())
    second = llm.summarize(new_part("You can push to main from here on."), previous=first)
    assert second.sections.constraints == ("Always use port 8080 for the dev server.",)


# -- the rule, unit by unit -------------------------------------------------------------


def previous_record(**sections: Any) -> SummaryRecord:
    return SummaryRecord(sections=Sections(**sections))


def content(**sections: Any) -> SummaryContent:
    return SummaryContent(narrative="n", sections=Sections(**sections))


def carried(previous: SummaryRecord, answer: SummaryContent, *said: str) -> SummaryContent:
    return carry_forward(answer, Update.of(previous, [user(text) for text in said]))


@pytest.mark.parametrize(
    ("said", "answer", "kept"),
    [
        # nothing about it: the constraint the answer forgot is put back
        (["Add the benchmarks."], [], True),
        # a person's new constraint supersedes it
        (["Use port 9090 for the dev server instead."], [], False),
        # a person names its subject, with no rule word
        (["The dev server port is fine as it is, I guess."], [], False),
        # the answer holds a constraint about the same subject
        (["Switch to 9090."], ["Dev server port: 9090"], False),
        # the answer's other constraints are about something else
        (["Switch to 9090."], ["Never push to main."], True),
    ],
)
def test_when_a_forgotten_constraint_comes_back(said, answer, kept):
    old = "Always use port 8080 for the dev server."
    out = carried(previous_record(constraints=(old,)), content(constraints=answer), *said)
    assert out.sections.constraints == ((old,) if kept else ()) + tuple(answer)


def test_a_constraint_without_subject_words_gives_way_to_any_new_constraint():
    old = "Use 8080 instead."
    previous = previous_record(constraints=(old,))
    assert carried(previous, content(), "Add the benchmarks.").sections.constraints == (old,)
    assert carried(previous, content(), "Always use 9090.").sections.constraints == ()


def test_requests_keep_their_order_and_the_answer_keeps_its_wording():
    previous = previous_record(user_messages=("one two", "three four", "five six"))
    answer = content(user_messages=["new first", "one two", "five six, with more", "seven"])
    out = carried(previous, answer)
    assert out.sections.user_messages == (
        "new first",
        "one two",
        "three four",
        "five six, with more",
        "seven",
    )


def test_a_request_the_answer_folded_into_another_is_not_put_back_twice():
    previous = previous_record(user_messages=("Fix it", "Fix it now please"))
    out = carried(previous, content(user_messages=["Fix it now please"]))
    assert out.sections.user_messages == ("Fix it now please",)


def test_a_restored_request_loses_the_sentence_the_new_part_superseded():
    previous = previous_record(
        user_messages=(
            "Deploy the app. Always use port 8080 for the dev server.",
            "Always use port 8080.",
        )
    )
    out = carried(previous, content(), "Use port 9090 for the dev server instead.")
    assert out.sections.user_messages == ("Deploy the app. [superseded, see constraints]",)


def test_a_value_a_new_constraint_changes_is_marked_in_a_restored_request():
    previous = previous_record(user_messages=("Deploy the app. Use port 8080 for the dev server.",))
    out = carried(previous, content(), "Use port 9090 for the dev server instead.")
    assert out.sections.user_messages == ("Deploy the app. [superseded, see constraints]",)
    kept = carried(previous, content(), "Add the benchmarks.")
    assert kept.sections.user_messages == previous.sections.user_messages


def test_a_restored_first_request_is_marked_too_but_always_kept():
    first = previous_record(primary_request=("Always use port 8080.",))
    out = carried(first, content(), "Use port 9090 instead.")
    assert out.sections.primary_request == ("[superseded, see constraints]",)
    unrelated = carried(first, content(), "Add the benchmarks.")
    assert unrelated.sections.primary_request == ("Always use port 8080.",)


def test_merged_lists_keep_their_caps_newest_first():
    old = tuple(f"request {i}" for i in range(MAX_SECTION_ITEMS))
    out = carried(previous_record(user_messages=old), content(user_messages=["the latest"]))
    assert len(out.sections.user_messages) == MAX_SECTION_ITEMS
    assert out.sections.user_messages[-1] == "the latest"
    assert out.sections.user_messages[0] == "request 1"


def test_files_the_answer_regrouped_are_not_put_back():
    previous = SummaryRecord(
        sections=Sections(files_and_code=("Read: src/a.py", "Edited: src/b.py", "the config")),
        facets=Facets(entities=Entities(files=("src/a.py", "src/b.py"))),
    )
    regrouped = SummaryContent(
        narrative="n",
        sections=Sections(files_and_code=("Edited: src/a.py; src/b.py", "the config file")),
        facets=Facets(entities=Entities(files=("src/c.py",))),
    )
    out = carry_forward(regrouped, Update.of(previous, []))
    assert out.sections.files_and_code == ("Edited: src/a.py; src/b.py", "the config file")
    assert out.facets.entities.files == ("src/a.py", "src/b.py", "src/c.py")
    dropped = carry_forward(content(files_and_code=["Edited: src/c.py"]), Update.of(previous, []))
    assert dropped.sections.files_and_code == (
        "Read: src/a.py",
        "Edited: src/b.py",
        "the config",
        "Edited: src/c.py",
    )


def test_an_observation_in_a_user_turn_is_not_something_a_person_said():
    observation = Message(
        Role.USER, (ToolResultPart("c1", "config: use port 9090 for the dev server"),)
    )
    update = Update.of(previous_record(), [observation])
    assert update.stated == ()
    assert update.said == ()


# -- the quality guard ------------------------------------------------------------------


def test_the_persons_constraints_are_wanted_the_latest_value_only():
    messages = [
        user("Port the lexer. Always use port 8080 for the dev server."),
        user("Actually, use port 9090 for the dev server instead. Never push to main."),
    ]
    facts = wanted(RuleBasedSummarizer().summarize(messages))
    constraints = [f.text for f in facts if f.kind == "constraint"]
    assert "Actually, use port 9090 for the dev server instead." in constraints
    assert "Never push to main." in constraints
    assert not any("8080" in fact.text for fact in facts)


def test_a_dropped_constraint_is_added_verbatim_not_asked_for(server, client):
    server.add(forgetful())
    events: list[object] = []
    with listening([events.append]):
        record = summarizer(client).summarize(first_part())
    assert len(server.requests) == 1
    assert record.model == MODEL
    assert record.narrative == "Porting the lexer."
    assert record.sections.constraints == (
        "Never push to main.",
        "Always use port 8080 for the dev server.",
    )
    assert set(record.sections.constraints) <= set(record.added)
    text = render(record)
    apart = text[text.index("Kept verbatim from the conversation") :]
    assert "- Constraint: Never push to main." in apart
    (filled,) = [e for e in events if isinstance(e, SummaryFilledIn)]
    assert "constraint: Never push to main." in filled.added
    assert str(Fact("constraint", "Always use port 8080 for the dev server.")) in filled.added


def test_an_update_request_stays_within_the_input_cap(server, client):
    llm = summarizer(client, max_input_tokens=2_500, oversize="trim")
    first = llm.summarize(first_part())
    # Many small messages: what is trimmed away fills the room to within a message.
    steps = [say(f"Step {i} is done; the next one is step {i + 1}.") for i in range(400)]
    llm.summarize([user("Go on with the steps."), *steps], previous=first)
    body = server.requests[1].body
    count = llm.counter.count_text
    assert "[5] assistant:" not in body["messages"][-1]["content"]  # trimmed, oldest first
    assert sum(count(m["content"]) for m in body["messages"]) <= 2_500
