from __future__ import annotations

import json

import pytest

from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.summarizers import (
    DEFAULT_EXTRACTORS,
    RuleBasedSummarizer,
    SummaryRecord,
    ToolExchange,
    ToolFacts,
    render,
    summary_message,
)
from synopsis.summarizers.records import MAX_KEY_POINTS
from synopsis.summarizers.rules.digest import LATEST_USER
from tests.summarizers.helpers import (
    call,
    coding_session,
    exchange,
    result,
    say,
    user,
)

BIG = RuleBasedSummarizer(max_summary_tokens=50_000)


def test_the_coding_session_in_full() -> None:
    record = BIG.summarize(coding_session())
    s, f = record.sections, record.facets
    assert s.primary_request == (
        "Add a `retry` option to FlexibleTokenizer in src/tok/core.py; keep Python 3.11.",
    )
    assert s.user_messages == (s.primary_request[0], "Great. Now document it in README.md.")
    assert record.key_points == (
        "[✓ read_file: File: src/tok/core.py | Lines: 5 | Type: python | "
        "Defines: FlexibleTokenizer, tokenize]",
        '[✓ grep: Pattern: "retry" | Matches: 2 | Files: 1 | Top files: src/tok/net.py]',
        "[❌ bash: Command: pytest -q tests/test_core.py | Exit: 1 | Output: 4 lines | "
        "Error: E AssertionError: expected 3 retries]",
        "[✓ edit_file: File: src/tok/core.py | Change: -1/+2 lines]",
        "[✓ bash: Command: pytest -q tests/test_core.py | Exit: 0 | Output: 2 lines]",
        "[✓ web_fetch: URL: https://docs.python.org/3/library/asyncio.html | Status: 200 | "
        "Title: asyncio — Asynchronous I/O]",
    )
    assert s.errors_and_fixes == (
        "bash `pytest -q tests/test_core.py`: E   AssertionError: expected 3 retries "
        "(fixed: a later attempt succeeded)",
    )
    # One line per action, strongest first: the edited file carries what was done to it, the
    # file grep found is searched, the paths only mentioned in words or commands are named.
    assert s.files_and_code == (
        "Edited: src/tok/core.py [read (5 lines, python), written (-1/+2 lines)]",
        "Searched: src/tok/net.py",
        "Named: tests/test_core.py; README.md",
    )
    assert s.constraints == ()  # "keep Python 3.11" names no rule's word
    assert s.pending_tasks == ("document retry",)
    assert s.next_step == "Next, I will update README.md with the retry option."
    assert s.current_work[0].startswith("Next, I will update README.md")
    assert s.current_work[1].startswith("Last tool call: [✓ web_fetch")
    # Key concepts carried noise, and the pending tasks already say what the action items did.
    assert s.key_concepts == ()
    assert "I'll use exponential backoff instead of a fixed delay." in s.problem_solving
    assert f.decisions == ("I'll use exponential backoff instead of a fixed delay.",)
    assert f.action_items == ()
    # Bare roles tell the reader nothing: only named participants are listed.
    assert f.participants == ()
    assert f.unresolved == ()
    e = f.entities
    assert e.files == ("src/tok/core.py", "src/tok/net.py", "tests/test_core.py", "README.md")
    assert e.commands == ("pytest -q tests/test_core.py",)
    assert e.urls == ("https://docs.python.org/3/library/asyncio.html",)
    assert e.errors == ("E   AssertionError: expected 3 retries",)
    assert e.versions == ("Python 3.11",)
    assert {"FlexibleTokenizer", "tokenize", "retry"} <= set(e.symbols)
    assert record.narrative == (
        "Earlier: 17 messages (2 from people, 8 from the assistant); 6 tool calls (bash x2, "
        "read_file x1, grep x1, edit_file x1, web_fetch x1), 1 failed."
    )
    assert record.model == "rules"
    assert not record.truncated


def test_user_messages_are_verbatim_up_to_the_bound() -> None:
    long = "Please refactor the parser.\n" + "detail " * 500
    record = RuleBasedSummarizer(user_message_chars=100, max_summary_tokens=5_000).summarize(
        [user(long), say("ok"), user("short one")]
    )
    first, second = record.sections.user_messages
    assert first == long[:100] + f"… [cut {len(long) - 100:,} characters]"
    assert second == "short one"
    assert record.sections.primary_request == (first,)
    # The request is verbatim up to the same bound as every request, not a shorter one.
    roomy = RuleBasedSummarizer(max_summary_tokens=5_000).summarize([user(long)])
    assert roomy.sections.primary_request == (
        long[:2000] + f"… [cut {len(long) - 2000:,} characters]",
    )
    assert record.sections.next_step == LATEST_USER


def test_tool_results_and_summaries_are_not_user_messages() -> None:
    earlier = summary_message(BIG.summarize([user("first task about QuantumWidget")]))
    history = [
        earlier,
        user("second task"),
        Message(Role.ASSISTANT, (ToolCallPart("t1", "bash", '{"command": "ls"}'),)),
        Message(Role.USER, (ToolResultPart("t1", "a.py"),)),  # Anthropic's shape
    ]
    record = BIG.summarize(history)
    assert record.sections.user_messages == ("second task",)
    assert record.sections.primary_request == ("second task",)
    # Without its record, the earlier summary is quoted rather than lost.
    assert "An earlier summary opened this part" in record.narrative
    assert "QuantumWidget" in record.narrative
    with_previous = BIG.summarize(history, previous=BIG.summarize([user("x")]))
    assert "An earlier summary" not in with_previous.narrative


def test_media_in_a_user_message_becomes_a_placeholder() -> None:
    message = Message(
        Role.USER,
        (TextPart("What is in this?"), MediaPart("image", "image/png", filename="shot.png")),
    )
    record = BIG.summarize([message, Message(Role.USER, (MediaPart("image"),))])
    assert record.sections.user_messages == (
        "What is in this?\n[image: shot.png]",
        "[image: image]",
    )


def test_empty_user_messages_are_skipped() -> None:
    record = BIG.summarize([user("   "), Message(Role.USER, ()), user("real")])
    assert record.sections.user_messages == ("real",)


def test_repeated_failures_are_counted_and_unfixed_ones_are_unresolved() -> None:
    history = [
        user("make it build"),
        *exchange("a", "bash", {"command": "make"}, "cc: error: x.c: No such file\nexit code: 2"),
        *exchange("b", "bash", {"command": "make"}, "cc: error: x.c: No such file\nexit code: 2"),
        *exchange("c", "lookup", {"id": 1}, "Error: not found"),
        *exchange("d", "lookup", {"id": 2}, "found it"),
        call("e", "read_file", {"path": "later.py"}),
    ]
    record = BIG.summarize(history)
    assert record.sections.errors_and_fixes == (
        "bash `make`: cc: error: x.c: No such file (2 times)",
        "lookup: Error: not found (a later call worked)",
    )
    assert record.facets.unresolved == (
        "read_file `later.py`: no result in the summarized part",
        "bash `make`: last attempt failed",
    )
    assert record.facets.entities.errors == ("cc: error: x.c: No such file", "Error: not found")


def test_parallel_calls_and_reused_ids_pair_like_the_planner() -> None:
    history = [
        user("go"),
        Message(
            Role.ASSISTANT,
            (
                ToolCallPart("x", "read_file", '{"path": "a.py"}'),
                ToolCallPart("y", "read_file", '{"path": "b.py"}'),
            ),
        ),
        result("y", "def b(): ..."),
        result("x", "def a(): ..."),
        call("x", "bash", {"command": "pytest"}),  # the id comes back for a new call
        result("x", "Process exited with code 0"),
        result("zzz", "stray output"),  # answers nothing
    ]
    record = BIG.summarize(history)
    assert record.key_points == (
        "[✓ read_file: File: a.py | Lines: 1 | Type: python | Defines: a]",
        "[✓ read_file: File: b.py | Lines: 1 | Type: python | Defines: b]",
        "[✓ bash: Command: pytest | Exit: 0 | Output: 1 lines]",
        "[✓ unknown_tool: Result: 1 lines, stray output]",
    )


def test_a_named_orphan_result_keeps_its_tool_name() -> None:
    orphan = Message(Role.TOOL, (ToolResultPart("q", "3 rows", name="sql_query"),))
    assert BIG.summarize([orphan]).key_points == ("[✓ sql_query: Result: 1 lines, 3 rows]",)


def test_plan_tools_set_the_pending_tasks() -> None:
    plan = {"plan": [{"step": "write tests", "status": "completed"}, {"step": "ship it"}]}
    record = BIG.summarize([user("go"), *exchange("p", "update_plan", plan, "Plan updated")])
    assert record.sections.pending_tasks == ("ship it",)
    finished = {"plan": [{"step": "ship it", "status": "completed"}]}
    done = BIG.summarize(
        [*exchange("p", "update_plan", plan, "ok"), *exchange("q", "update_plan", finished, "ok")]
    )
    assert done.sections.pending_tasks == ()


def test_todo_lines_and_next_step_cues_in_the_last_assistant_text() -> None:
    text = "Done with parsing.\nTODO: handle unicode\n- [ ] add docs\n* [x] old\nLet me run mypy."
    record = BIG.summarize([user("go"), say("Earlier note."), say(text)])
    assert record.sections.pending_tasks == ("handle unicode", "add docs")
    assert record.sections.next_step == "Let me run mypy."
    quiet = BIG.summarize([user("go"), say("All finished.")])
    assert quiet.sections.next_step is None
    assert quiet.sections.pending_tasks == ()
    only_step = BIG.summarize([say("Let me run mypy.")])
    assert only_step.sections.next_step is None  # already the current work, said once
    assert only_step.sections.current_work == ("Let me run mypy.",)


def test_custom_extractors_add_and_replace_by_name() -> None:
    def deploy(ex: ToolExchange) -> ToolFacts:
        return ToolFacts(ex.name, "success", (f"Env: {ex.arguments.get('env')}",))

    def quiet_bash(ex: ToolExchange) -> ToolFacts:
        return ToolFacts(ex.name, "success", ("ran",))

    summarizer = RuleBasedSummarizer(
        extractors={"Deploy": deploy, "BASH": quiet_bash}, max_summary_tokens=5_000
    )
    history = [
        *exchange("d", "deploy", {"env": "prod"}, "ok"),
        *exchange("b", "bash", {"command": "ls"}, "x"),
        *exchange("r", "read_file", {"path": "a.txt"}, "hello"),
    ]
    assert summarizer.summarize(history).key_points == (
        "[✓ deploy: Env: prod]",
        "[✓ bash: ran]",
        "[✓ read_file: File: a.txt | Lines: 1 | Type: txt]",
    )
    assert summarizer.extractors["read_file"] is DEFAULT_EXTRACTORS["read_file"]


def test_a_failing_extractor_falls_back_to_the_generic_one() -> None:
    def broken(ex: ToolExchange) -> ToolFacts:
        raise RuntimeError("bug in a plugin")

    summarizer = RuleBasedSummarizer(extractors={"bash": broken})
    record = summarizer.summarize(exchange("b", "bash", {"command": "ls"}, "a.py"))
    assert record.key_points == ("[✓ bash: Args: command=ls | Result: 1 lines, a.py]",)


@pytest.mark.parametrize(
    "arguments",
    ["{not json", "[1, 2]", "", "null", '"just a string"', "{" * 5000, '{"path": {"x": [1]}}'],
)
@pytest.mark.parametrize("name", ["read_file", "bash", "grep", "apply_patch", "fetch", "??", ""])
def test_garbage_arguments_never_crash(name: str, arguments: str) -> None:
    history = [call("g", name, arguments), result("g", "\x00weird\nError: ☃")]
    record = RuleBasedSummarizer().summarize(history)
    assert len(record.key_points) == 1


def test_mapping_arguments_are_read_like_json_text() -> None:
    message = Message(Role.ASSISTANT, (ToolCallPart("m", "read_file", {"path": "m.py"}),))
    record = BIG.summarize([message, result("m", "x = 1")])
    assert record.key_points == ("[✓ read_file: File: m.py | Lines: 1 | Type: python]",)


def test_key_points_keep_failures_when_capped() -> None:
    history: list[Message] = []
    for i in range(MAX_KEY_POINTS + 10):
        failing = i < 5
        output = "exit code: 1\nerror: boom" if failing else "exit code: 0"
        history += exchange(f"c{i}", "bash", {"command": f"step {i}"}, output)
    points = BIG.summarize(history).key_points
    assert len(points) == MAX_KEY_POINTS
    assert sum(p.startswith("[❌") for p in points) == 5
    assert points[-1] == f"[✓ bash: Command: step {MAX_KEY_POINTS + 9} | Exit: 0 | Output: 1 lines]"
    all_failing: list[Message] = []
    for i in range(MAX_KEY_POINTS + 2):
        all_failing += exchange(f"f{i}", "bash", {"command": f"s{i}"}, "exit code: 1")
    assert len(BIG.summarize(all_failing).key_points) == MAX_KEY_POINTS


def test_every_request_is_kept_while_the_budget_allows() -> None:
    history: list[Message] = []
    for i in range(120):
        history += [user(f"request {i}"), say(f"answer {i}")]
    record = BIG.summarize(history)
    assert record.sections.user_messages == tuple(f"request {i}" for i in range(120))
    assert not record.truncated


@pytest.mark.parametrize("budget", [300, 600, 1200])
def test_under_a_small_budget_the_first_and_the_newest_requests_stay(budget: int) -> None:
    history: list[Message] = []
    for i in range(400):
        history += [user(f"request {i}"), say(f"answer {i}")]
    summarizer = RuleBasedSummarizer(max_summary_tokens=budget)
    record = summarizer.summarize(history)
    assert record.truncated
    assert summarizer.measure(record) <= budget
    assert record.sections.primary_request == ("request 0",)
    kept = [int(m.split()[1]) for m in record.sections.user_messages]
    assert kept[-1] == 399
    assert kept[1:] == list(range(400 - len(kept) + 1, 400))  # the newest, none skipped


def test_flagged_requests_outlast_the_others() -> None:
    history: list[Message] = [user("request 0"), user("FACT: the codename is LANTERN.")]
    for i in range(1, 200):
        history += [user(f"request {i}"), say(f"answer {i}")]
    record = RuleBasedSummarizer(max_summary_tokens=600).summarize(history)
    users = record.sections.user_messages
    assert record.truncated
    assert "request 1" not in users
    assert record.sections.primary_request == ("request 0",)
    assert users[0] == "FACT: the codename is LANTERN."


def test_the_previous_record_is_merged() -> None:
    first = BIG.summarize(coding_session())
    later = [
        user("Also bump the version to 2.1.0 in pyproject.toml."),
        *exchange("r", "read_file", {"path": "src/tok/core.py"}, "class A: ..."),
        *exchange(
            "w", "write_file", {"path": "pyproject.toml", "content": "version = '2.1.0'"}, "ok"
        ),
        say("Bumped.\nTODO: tag the release"),
    ]
    second = BIG.summarize(later, previous=first)
    s = second.sections
    assert s.primary_request == first.sections.primary_request
    assert s.user_messages == (*first.sections.user_messages, later[0].text)
    # The file lines are merged by action: a newly edited file joins the edited line, and a
    # file read again stays under its strongest action with what was done to it.
    assert s.files_and_code == (
        "Edited: src/tok/core.py [read (5 lines, python), written (-1/+2 lines)]; "
        "pyproject.toml [written (1 lines, 17 chars)]",
        "Searched: src/tok/net.py",
        "Named: tests/test_core.py; README.md",
    )
    assert s.errors_and_fixes == first.sections.errors_and_fixes
    assert s.pending_tasks == ("tag the release",)
    assert second.key_points[: len(first.key_points)] == first.key_points
    assert second.facets.entities.files[:4] == first.facets.entities.files
    assert "2.1.0" in second.facets.entities.versions
    assert second.narrative.startswith(first.narrative + "\nThen 6 messages")
    # The chain stands for every message it covered, not only this part's.
    assert second.messages_covered == len(coding_session()) + len(later) == 23
    assert "(23 messages)" in render(second)
    # Nothing new about the present: the previous pending work stands.
    third = BIG.summarize([user("thanks")], previous=second)
    assert third.sections.pending_tasks == ("tag the release",)
    assert third.sections.next_step == LATEST_USER
    assert third.messages_covered == 24


def test_a_foreign_previous_record_is_carried_as_it_is() -> None:
    previous = SummaryRecord(
        narrative="x" * 5_000,
        sections={"files_and_code": ("Refactored the whole auth module",)},  # type: ignore[arg-type]
    )
    record = BIG.summarize(exchange("r", "read_file", {"path": "auth.py"}, "y"), previous=previous)
    # A line this summarizer did not write is kept word for word, after its own lines.
    assert record.sections.files_and_code == (
        "Read: auth.py [read (1 lines, python)]",
        "Refactored the whole auth module",
    )
    assert record.narrative.startswith("…" + "x" * 999)


def test_arguments_are_scanned_for_anchors_but_bodies_are_not() -> None:
    body = "import os\n" + "VeryLongIdentifierInBody = 1\n" * 20
    history = exchange(
        "w", "write_file", {"path": "pkg/mod.py", "content": body, "note": "see MyHelper"}, "ok"
    )
    entities = BIG.summarize(history).facets.entities
    assert "MyHelper" in entities.symbols
    assert "VeryLongIdentifierInBody" not in entities.symbols
    assert json.dumps(body) not in BIG.summarize(history).model_dump_json()


def test_parts_without_words_are_left_out_of_user_messages() -> None:
    message = Message(
        Role.USER, (TextPart("look"), OpaquePart("citation", {"type": "citation"}, text="[1]"))
    )
    assert BIG.summarize([message]).sections.user_messages == ("look",)


def test_the_ids_a_call_acted_on_are_kept_as_identifiers() -> None:
    history = [
        *exchange("a", "write_stdin", {"session_id": 83260, "chars": "y\n"}, "ok"),
        *exchange("b", "get_reservation", {"reservation_id": "Q0ZF0J", "user_id": " "}, "ok"),
        *exchange("c", "kill", {"pid": True, "paid": 12, "identity": "no"}, "ok"),
    ]
    symbols = BIG.summarize(history).facets.entities.symbols
    assert {"83260", "Q0ZF0J"} <= set(symbols)
    # a blank id, a flag, and keys that only end in the letters "id" name nothing
    assert not {"", "True", "12", "no"} & set(symbols)
