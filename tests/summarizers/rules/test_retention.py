"""What the rule summary keeps through a chain of re-compactions: the person's requests and
constraints above all, the files, a count of everything covered, and nothing meaningless."""

from __future__ import annotations

from synopsis.messages import Message, Role, TextPart
from synopsis.summarizers import RuleBasedSummarizer, SummaryRecord, render
from synopsis.summarizers.records import Facets, Sections
from tests.summarizers.helpers import exchange, rendered_tokens, say, user

RULE = "Never change the public API in src/app/api.py."
REQUESTS = (
    f"Add input validation to the signup form in src/app/forms.py. {RULE}",
    "Now cover the validators with tests in tests/test_forms.py.",
    "Serve the dev server on port 8080 while we test.",
    "Rename the helper clean_email to normalize_email everywhere.",
    "Actually use port 9090 instead.",
    "Add a changelog entry for the validation work.",
    "Make the error messages friendlier in src/app/messages.py.",
    "Run the whole test suite again, please.",
    "Bump the version to 1.4.0 in pyproject.toml.",
    "Write a short summary of what changed for the release notes.",
)
SUMMARIZER = RuleBasedSummarizer(max_summary_tokens=8_000)
BUDGET = 1_500


def part(k: int) -> list[Message]:
    """A person's request, then the agent reads, searches, edits and tests its own files."""
    base = f"src/app/part{k}"
    failed = k % 3 == 0
    output = "F\nE   AssertionError: boom\n1 failed\nexit code: 1" if failed else "..\nexit code: 0"
    return [
        user(REQUESTS[k]),
        *exchange(f"r{k}", "read_file", {"path": f"{base}/module.py"}, "def f():\n    return 1\n"),
        *exchange(
            f"g{k}", "grep", {"pattern": "clean_email", "path": "src"}, f"{base}/util.py:3: x()\n"
        ),
        *exchange(
            f"e{k}",
            "edit_file",
            {"path": f"{base}/module.py", "old_string": "return 1", "new_string": "return 2"},
            "File edited.",
        ),
        *exchange(f"b{k}", "bash", {"command": f"pytest -q tests/test_part{k}.py"}, output),
        say(f"Part {k} done: I edited {base}/module.py and ran its tests."),
    ]


def chain(parts: int = 10) -> list[SummaryRecord]:
    """Each part summarized into the record before it, as successive compactions do."""
    records: list[SummaryRecord] = []
    for k in range(parts):
        previous = records[-1] if records else None
        records.append(SUMMARIZER.summarize(part(k), previous=previous, max_tokens=BUDGET))
    return records


RECORDS = chain()


def listed(record: SummaryRecord, path: str) -> bool:
    return any(path in line for line in record.sections.files_and_code)


def test_the_chain_is_ten_compactions_deep_and_each_fits() -> None:
    assert [r.depth for r in RECORDS] == list(range(10))
    assert all(rendered_tokens(r) <= BUDGET for r in RECORDS)
    # The budget binds: the chain would not fit without cutting.
    assert RECORDS[-1].truncated


def test_every_request_and_the_constraint_survive_ten_compactions() -> None:
    for k, record in enumerate(RECORDS):
        sections = record.sections
        assert sections.primary_request == (REQUESTS[0],)
        assert RULE in sections.constraints
        # Every request so far, in order; the superseded one marked, the correction quoted
        # as the constraint it is.
        expected = [
            "[superseded, see constraints]" if i == 2 and k >= 4 else text
            for i, text in enumerate(REQUESTS[: k + 1])
        ]
        assert list(sections.user_messages) == expected
        text = render(record)
        assert f"   - {RULE}" in text
        for request in REQUESTS[: k + 1]:
            if request != REQUESTS[2] or k < 4:
                assert request in text


def test_the_first_parts_files_are_still_listed_after_ten_compactions() -> None:
    last = RECORDS[-1]
    for path in ("src/app/part0/module.py", "src/app/part0/util.py", "src/app/forms.py"):
        assert listed(last, path), path
    assert any(
        line.startswith("Edited: src/app/part0/module.py") for line in last.sections.files_and_code
    )
    for k in range(10):
        assert listed(last, f"src/app/part{k}/module.py")


def test_a_later_correction_supersedes_the_earlier_value() -> None:
    before, after = RECORDS[3], RECORDS[4]
    assert REQUESTS[2] in before.sections.user_messages
    assert after.sections.constraints == (RULE, "Actually use port 9090 instead.")
    assert REQUESTS[2] not in after.sections.user_messages
    for record in RECORDS[4:]:
        sections = "\n".join(
            (
                *record.sections.constraints,
                *record.sections.user_messages,
                *record.sections.primary_request,
            )
        )
        assert "8080" not in sections
        assert "Actually use port 9090 instead." in record.sections.constraints


def test_a_correction_of_a_rule_replaces_it_across_compactions() -> None:
    first = SUMMARIZER.summarize([user("Always indent with 2 spaces."), say("OK.")])
    second = SUMMARIZER.summarize(
        [user("Actually, always indent with 4 spaces."), say("Switched.")], previous=first
    )
    assert second.sections.constraints == ("Actually, always indent with 4 spaces.",)
    assert second.sections.user_messages == (
        "[superseded, see constraints]",
        "Actually, always indent with 4 spaces.",
    )
    assert "2 spaces" not in render(second)


def test_a_superseded_value_is_nowhere_in_the_summary() -> None:
    big = RuleBasedSummarizer(max_summary_tokens=50_000)
    record = big.summarize(part(2))
    record = big.summarize(part(4), previous=record)
    assert "8080" not in render(record)


def test_the_header_counts_every_covered_message() -> None:
    total = 0
    for k, record in enumerate(RECORDS):
        total += len(part(k))
        assert record.messages_covered == total
        assert len(record.covers) == len(part(k))
        text = render(record)
        assert f'depth="{k}" messages="{total}"' in text
        assert f"Summary of the earlier conversation ({total} messages)" in text
        assert f"({total} messages)" in render(record, style="snapshot")
    assert RECORDS[0].covered_total is None
    assert RECORDS[-1].covered_total == 100


def test_requests_and_constraints_are_the_last_thing_cut() -> None:
    history = [message for k in range(10) for message in part(k)]
    whole = SUMMARIZER.summarize(history)
    assert not whole.truncated
    bare = whole.model_copy(
        update={
            "narrative": "",
            "key_points": (),
            "facets": Facets(),
            "sections": Sections(
                primary_request=whole.sections.primary_request,
                constraints=whole.sections.constraints,
                user_messages=whole.sections.user_messages,
            ),
            "truncated": True,
        }
    )
    budget = rendered_tokens(bare) + 30
    assert budget < rendered_tokens(whole) // 2
    cut = SUMMARIZER.summarize(history, max_tokens=budget)
    assert cut.truncated
    assert rendered_tokens(cut) <= budget
    # The tool log and the files did not fit; the person's words all did.
    assert cut.key_points == ()
    assert cut.sections.errors_and_fixes == ()
    assert len("".join(cut.sections.files_and_code)) < len("".join(whole.sections.files_and_code))
    assert cut.sections.primary_request == whole.sections.primary_request
    assert cut.sections.constraints == whole.sections.constraints
    assert cut.sections.user_messages == whole.sections.user_messages
    # Below that, the requests go before the constraints, and the first request goes last.
    tighter = SUMMARIZER.summarize(history, max_tokens=rendered_tokens(bare) - 40)
    assert tighter.sections.primary_request == whole.sections.primary_request
    assert tighter.sections.constraints
    assert len(tighter.sections.user_messages) < len(whole.sections.user_messages)


def test_no_meaningless_sections() -> None:
    for record in (RECORDS[0], RECORDS[-1], SUMMARIZER.summarize(part(0))):
        for style in ("sections", "snapshot"):
            text = render(record, style=style)
            assert "Participants" not in text
            assert "Key Technical Concepts" not in text
            assert "<key_concepts>" not in text
            assert "Action item" not in text
        assert record.sections.key_concepts == ()
        assert record.facets.participants == ()


def test_named_participants_are_listed() -> None:
    named = Message(Role.USER, (TextPart("Fix the login bug."),), name="alice")
    record = SUMMARIZER.summarize([named, say("On it."), user("Thanks.")])
    assert record.facets.participants == ("user (alice)",)
    assert "- Participants: user (alice)" in render(record)


def test_named_participants_are_carried_through_a_recompaction() -> None:
    named = Message(Role.USER, (TextPart("Fix the login bug."),), name="alice")
    first = SUMMARIZER.summarize([named, say("On it.")])
    second = SUMMARIZER.summarize([user("And the logout bug."), say("Sure.")], previous=first)
    assert second.facets.participants == ("user (alice)",)


def test_a_rule_corrected_within_one_part_leaves_its_request() -> None:
    record = SUMMARIZER.summarize(
        [
            user("Always indent with 2 spaces."),
            say("OK."),
            user("Actually, always indent with 4 spaces."),
        ]
    )
    assert record.sections.constraints == ("Actually, always indent with 4 spaces.",)
    assert record.sections.user_messages[0] == "[superseded, see constraints]"


STARS = "I need 300 stars to reach the gold level."
CORRECTION = "Actually, I need 120 stars to reach the gold level, not 300."


def test_a_correction_of_a_value_stated_in_an_earlier_part_replaces_it() -> None:
    first = SUMMARIZER.summarize([user(STARS), say("Great, 300 stars it is.")])
    chat = [user("How many do I have now?"), say("You have 50."), user(CORRECTION), say("Noted.")]
    second = SUMMARIZER.summarize(chat, previous=first)
    alone = SUMMARIZER.summarize([user(STARS), say("Great, 300 stars it is."), *chat])
    for record in (second, alone):
        assert record.sections.constraints == (CORRECTION,)
        assert STARS not in record.sections.user_messages
        assert "[superseded, see constraints]" in record.sections.user_messages


def test_a_promise_is_not_a_constraint() -> None:
    record = SUMMARIZER.summarize(
        [
            user("Write the cover letter. I'll make sure to send it before Friday."),
            say("I'll make sure to keep it concise and professional."),
            user("We will ensure the names are right. Never mention my old employer."),
        ]
    )
    assert record.sections.constraints == ("Never mention my old employer.",)


def test_every_constraint_is_kept_while_the_budget_allows() -> None:
    history: list[Message] = [user("Tidy the repository.")]
    for i in range(80):
        history += [user(f"Never touch src/legacy/mod{i}.py."), say("OK.")]
    rules = tuple(f"Never touch src/legacy/mod{i}.py." for i in range(80))
    whole = SUMMARIZER.summarize(history)
    assert whole.sections.constraints == rules
    assert not whole.truncated
    small = RuleBasedSummarizer(max_summary_tokens=400)
    cut = small.summarize(history)
    assert cut.truncated
    assert small.measure(cut) <= 400
    # The newest outlast the oldest, and the first request stays.
    kept = cut.sections.constraints
    assert 0 < len(kept) < len(rules)
    assert kept == rules[len(rules) - len(kept) :]
    assert cut.sections.primary_request == ("Tidy the repository.",)
