"""A person's requests and constraints: which sentences are rules, and which later sentence
replaces which earlier one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis.summarizers.requests import (
    Constraint,
    Requests,
    constraint_sentences,
    firm,
    flagged,
    label_of,
)
from synopsis.summarizers.scanning import bounded

SUPERSEDED = "[superseded, see constraints]"


def conversation(*texts: str, chars: int = 2000) -> Requests:
    requests = Requests()
    for text in texts:
        requests.add_request(text, chars)
    return requests


def rules(requests: Requests) -> list[str]:
    return [c.text for c in requests.constraints]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Never push to main.", ["Never push to main."]),
        ("Fix the parser. Do not touch the lexer!", ["Do not touch the lexer!"]),
        ("Rules:\n- always run ruff\n* only edit src/", ["always run ruff", "only edit src/"]),
        ("Use pnpm instead of npm. Thanks.", ["Use pnpm instead of npm."]),
        ("Make sure the build stays green? Good.", ["Make sure the build stays green?"]),
        ("Please fix the failing test in src/app.py.", []),
        ("- \n* \n", []),  # bullets without words
        ("", []),
        # A bold opening is no bullet: the sentence is kept as the person wrote it.
        (
            "- **Fix**: kept only `id`, never the rest.",
            ["**Fix**: kept only `id`, never the rest."],
        ),
        # An instruction the person put in quotes is theirs; a string literal is code.
        ('"don\'t add notes, just track the id"', ['"don\'t add notes, just track the id"']),
        ('    "name": "must be unique",\n    "must be positive",\n    \'only\'', []),
        ("1463:    msg = 'x must be y'\nlimit = only(3)", []),
        ("I'll make sure to keep it concise and professional.", []),
        (
            "We will ensure it ships, and never on a Friday.",
            ["We will ensure it ships, and never on a Friday."],
        ),
    ],
)
def test_constraint_sentences_are_the_rules_a_text_states(text: str, expected: list[str]) -> None:
    assert constraint_sentences(text) == expected


def test_a_long_constraint_sentence_is_bounded() -> None:
    sentence = "Never " + "touch " * 200 + "it."
    (found,) = constraint_sentences(sentence)
    assert found == bounded(sentence, 400)


def test_a_later_value_for_the_same_subject_supersedes() -> None:
    earlier = Constraint.of("Always use port 8080.")
    later = Constraint.of("Always use port 9090.")
    assert later.supersedes(earlier)
    assert not earlier.supersedes(earlier)
    assert earlier.subject == frozenset({"port"})
    assert earlier.values == frozenset({"8080"})


def test_a_correction_word_supersedes_without_a_new_value() -> None:
    earlier = Constraint.of("Always format the docs with prettier.")
    assert Constraint.of("Actually, no longer format the docs with prettier.").supersedes(earlier)
    # The same subject without a correction or a new value is a second rule, not a change.
    assert not Constraint.of("Never format the docs by hand.").supersedes(earlier)


def test_another_subject_never_supersedes() -> None:
    earlier = Constraint.of("Never push to main.")
    assert not Constraint.of("Actually always run the tests before committing.").supersedes(earlier)
    # A sentence of nothing but values and stop words has no subject to compare.
    assert not Constraint.of("Use 42 instead.").supersedes(Constraint.of("Use 41."))


def test_revalues_needs_other_values_and_most_of_the_words() -> None:
    earlier = Constraint.of("Set the timeout to 30 seconds for the API client.")
    assert Constraint.of("Set the timeout to 60 seconds for the API client.").revalues(earlier)
    assert not Constraint.of("Set the timeout to 30 seconds for the API client!").revalues(earlier)
    assert not Constraint.of("Never change PORT.").revalues(earlier)
    assert not Constraint.of("Keep the timeout short.").revalues(earlier)


def test_a_correction_of_the_port_leaves_only_the_new_port() -> None:
    requests = conversation("Use port 8080.", "Actually use port 9090 instead.")
    assert rules(requests) == ["Actually use port 9090 instead."]
    assert requests.superseded == ["Use port 8080."]
    assert requests.current_requests() == [SUPERSEDED, "Actually use port 9090 instead."]


def test_a_new_budget_cap_replaces_the_old_one() -> None:
    requests = conversation("Budget cap is $500.", "Budget cap is now $750.")
    assert rules(requests) == ["Budget cap is now $750."]
    assert requests.current_requests() == [SUPERSEDED, "Budget cap is now $750."]
    assert "$500" not in " ".join(requests.current_requests())


def test_a_rule_superseded_by_a_later_rule_leaves_the_requests() -> None:
    requests = conversation(
        "Refactor the parser. Always indent with 2 spaces.",
        "Actually, always indent with 4 spaces.",
    )
    assert rules(requests) == ["Actually, always indent with 4 spaces."]
    assert requests.current_requests() == [
        f"Refactor the parser. {SUPERSEDED}",
        "Actually, always indent with 4 spaces.",
    ]


def test_unrelated_constraints_are_both_kept() -> None:
    requests = conversation("Never push to main.", "Always run the tests before committing.")
    assert rules(requests) == ["Never push to main.", "Always run the tests before committing."]
    assert requests.superseded == []
    assert requests.current_requests() == requests.requests


def test_an_identical_constraint_is_kept_once() -> None:
    requests = conversation("Never push to main.", "Fix it. Never push to main.")
    assert rules(requests) == ["Never push to main."]
    assert requests.current_requests() == ["Never push to main.", "Fix it. Never push to main."]


def test_a_rule_stated_again_holds_again() -> None:
    requests = conversation(
        "Always use port 8080.", "Actually use port 9090 instead.", "Always use port 8080."
    )
    assert rules(requests) == ["Always use port 8080."]
    assert requests.superseded == ["Actually use port 9090 instead."]
    assert requests.current_requests() == [
        "Always use port 8080.",
        SUPERSEDED,
        "Always use port 8080.",
    ]


def test_a_value_stated_again_after_its_correction_is_not_marked_superseded() -> None:
    requests = conversation("Use port 8080.", "Actually use port 9090 instead.", "Use port 8080.")
    assert requests.current_requests() == [
        SUPERSEDED,
        "Actually use port 9090 instead.",
        "Use port 8080.",
    ]


def test_a_rule_does_not_supersede_a_value_set_in_the_same_request() -> None:
    requests = conversation("Use port 9090. Never use port 8080.")
    assert rules(requests) == ["Never use port 8080."]
    assert requests.superseded == []


def test_new_values_without_a_correction_are_new_requests_not_corrections() -> None:
    requests = conversation("Read lines 1-50 of foo.py.", "Read lines 51-100 of foo.py.")
    assert rules(requests) == []
    assert requests.superseded == []


def test_a_correction_word_with_nothing_to_correct_is_no_constraint() -> None:
    assert rules(conversation("Now run the suite with 4 workers.")) == []
    assert rules(conversation("Fix the bug.", "Now run the suite with 4 workers.")) == []


def test_requests_are_bounded_once() -> None:
    long = "Please refactor the parser.\n" + "detail " * 100
    requests = conversation(long, chars=50)
    assert requests.requests == [bounded(long, 50)]
    # A request carried already cut at the same bound (from a digest) is not cut again...
    again = conversation(bounded(long, 50), chars=50)
    assert again.requests == [bounded(long, 50)]
    # ...but one cut at another bound is cut at this one.
    other = conversation(bounded(long, 80), chars=50)
    assert other.requests == [bounded(bounded(long, 80), 50)]


def test_constraints_added_before_the_requests_are_superseded_like_the_others() -> None:
    # As a re-compaction does: the previous record's constraints first, then new requests.
    requests = Requests()
    requests.add_constraint("Always use port 8080.")
    requests.add_constraint("Never push to main.")
    requests.add_request("Actually use port 9090 instead.", 2000)
    assert rules(requests) == ["Never push to main.", "Actually use port 9090 instead."]
    assert requests.superseded == ["Always use port 8080."]


def carried(*texts: str) -> Requests:
    """Requests set as a re-compaction sets them: the texts first, constraints after."""
    requests = Requests()
    requests.requests = list(texts)
    return requests


def test_a_constraint_added_after_its_request_supersedes_only_what_came_before_it() -> None:
    requests = carried("Use port 8080.", "Actually use port 9090 instead.", "Use port 8080.")
    requests.add_constraint("Actually use port 9090 instead.")
    assert requests.current_requests() == [
        SUPERSEDED,
        "Actually use port 9090 instead.",
        "Use port 8080.",
    ]


def test_a_later_part_supersedes_what_the_previous_one_said() -> None:
    previous = conversation("Refactor it. Always indent with 2 spaces.", "Use port 8080.")
    later = conversation(
        "Actually, always indent with 4 spaces.", "Actually use port 9090 instead."
    )
    previous.extend(later)
    assert rules(previous) == [
        "Actually, always indent with 4 spaces.",
        "Actually use port 9090 instead.",
    ]
    assert previous.current_requests() == [
        f"Refactor it. {SUPERSEDED}",
        SUPERSEDED,
        "Actually, always indent with 4 spaces.",
        "Actually use port 9090 instead.",
    ]


def test_what_a_later_part_superseded_in_itself_stays_superseded() -> None:
    previous = conversation("Fix the login bug.")
    later = conversation(
        "Use port 8080.", "Actually use port 9090 instead.", "Use port 8080 for the docs server."
    )
    previous.extend(later)
    assert previous.current_requests() == [
        "Fix the login bug.",
        SUPERSEDED,
        "Actually use port 9090 instead.",
        "Use port 8080 for the docs server.",
    ]
    # A constraint of the later part does not reach back into the part's own statements:
    # the part itself already judged them, on its whole text.
    alone = conversation("Fix the login bug.")
    alone.extend(conversation("Use port 9090. Never use port 8080."))
    assert alone.superseded == []


def test_adding_a_constraint_leaves_rules_said_in_the_requests_to_the_constraints() -> None:
    # A rule is superseded through the constraints it is among, not through the text of
    # the requests: the requests may quote it from a demonstration, a template, a paste.
    requests = carried(
        "Refactor it. Always indent with 2 spaces.", "Actually, always use 4 spaces."
    )
    requests.add_constraint("Actually, always use 4 spaces.")
    assert requests.superseded == []


def test_a_constraint_said_in_no_request_supersedes_them_all() -> None:
    requests = carried("Use port 8080.", "Fine. Use port 8080.")
    requests.add_constraint("Always use port 9090.")
    assert requests.current_requests() == [SUPERSEDED, f"Fine. {SUPERSEDED}"]
    same = carried("Use port 9090. Never use port 8080.")
    same.add_constraint("Never use port 8080.")
    assert same.superseded == []


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Never edit src/a.py.", "Never edit src/b.py."),
        ("Never touch module1.py.", "Never touch module2.py."),
        ("Always run test_one first.", "Always run test_two first."),
    ],
)
def test_the_same_rule_about_another_thing_supersedes_nothing(first: str, second: str) -> None:
    requests = Requests()
    requests.add_request(first, 2000)
    requests.add_request(second, 2000)
    assert rules(requests) == [first, second]
    assert requests.superseded == []


def test_many_corrections_leave_only_the_latest() -> None:
    requests = Requests()
    for port in range(8000, 8300):
        requests.add_request(f"Always use port {port}.", 2000)
    assert rules(requests) == ["Always use port 8299."]
    assert len(requests.superseded) == 299
    assert requests.current_requests()[0] == "[superseded, see constraints]"


_TEMPLATES = (
    "Always use port {n}.",
    "Never edit src/mod{n}.py.",
    "The budget cap must stay under ${n}.",
    "Only deploy on day {n}.",
    "Do not retry more than {n} times.",
)


@given(
    st.lists(
        st.tuples(st.integers(0, len(_TEMPLATES) - 1), st.integers(1, 40)),
        min_size=1,
        max_size=40,
    )
)
def test_the_newest_rule_holds_and_nothing_is_both_kept_and_superseded(
    said: list[tuple[int, int]],
) -> None:
    requests = Requests()
    for template, n in said:
        requests.add_request(_TEMPLATES[template].format(n=n), 2000)
    kept = rules(requests)
    newest = _TEMPLATES[said[-1][0]].format(n=said[-1][1])
    assert newest in kept
    assert not set(kept) & set(requests.superseded)
    assert len(kept) == len(set(kept))
    # A superseded rule leaves the request that said it, unless said again later.
    for index, text in enumerate(requests.current_requests()):
        original = requests.requests[index]
        assert text == original or text == "[superseded, see constraints]"
        if text != original:
            assert original in requests.superseded


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("I don't remember the reservation ID, sorry.", False),
        ("It doesn't matter which one.", False),
        ("Do not push to main.", True),
        ("Please don't delete the logs.", True),
        ("The tests, don't touch them.", True),
    ],
)
def test_do_not_is_a_rule_when_it_tells_someone_what_not_to_do(text: str, rule: bool) -> None:
    assert (constraint_sentences(text) == [text]) is rule


def test_a_line_a_rules_label_opens_is_one_rule_with_every_sentence() -> None:
    text = "HARD CONSTRAINT: Only Python 3.11. No external network calls from the sandbox."
    assert constraint_sentences(text) == [text]
    requests = Requests()
    requests.add_request(f"Setup notes.\n{text}\nAlso never push.", 2000)
    assert [c.text for c in requests.constraints] == [text, "Also never push."]


def test_a_label_makes_no_two_rules_the_same_subject() -> None:
    requests = Requests()
    for text in (
        "HARD CONSTRAINT: Only Python 3.11.",
        "USER PREFERENCE: User wants code examples in Python, not JavaScript.",
        "HARD CONSTRAINT: Budget cap is $500 total.",
        "HARD CONSTRAINT: Budget cap is now $750 total.",
    ):
        requests.add_request(text, 2000)
    assert [c.text for c in requests.constraints] == [
        "HARD CONSTRAINT: Only Python 3.11.",
        "USER PREFERENCE: User wants code examples in Python, not JavaScript.",
        "HARD CONSTRAINT: Budget cap is now $750 total.",
    ]
    assert requests.superseded == ["HARD CONSTRAINT: Budget cap is $500 total."]


@pytest.mark.parametrize(
    ("text", "is_flagged"),
    [
        ("FACT: The codename is LANTERN.", True),
        ("GOAL STATE: Steps 1-3 of 5 are done.", True),
        ("IMPORTANT: keep the old API.", True),
        ("Note: the linter config lives in pyproject.toml.", False),
        ("FACT:no space after the colon", False),
        ("The FACT: is buried", False),
    ],
)
def test_a_label_flags_a_statement(text: str, is_flagged: bool) -> None:
    assert flagged(text) is is_flagged


@pytest.mark.parametrize(
    ("rule", "is_firm"),
    [
        ("Never push to main.", True),
        ("Only Python 3.11.", True),
        ("All times must be reported in UTC.", True),
        ("Do not touch the lockfile.", True),
        ("No external network calls.", True),
        ("SAFETY RULE: If a request could harm a third party, stop and escalate.", True),
        ("HARD CONSTRAINT: Budget cap is $500 total.", True),
        ("GOAL STATE: the branch must stay unpushed.", True),
        ("USER PREFERENCE: User wants answers with no em-dashes; never use semicolons.", False),
        ("We should add a smoke test.", False),
        ("I prefer tabs.", False),
        ("Use pnpm instead of npm.", False),
        ("FACT: the codename is LANTERN.", False),
    ],
)
def test_a_prohibition_or_requirement_is_firm_a_preference_is_not(rule: str, is_firm: bool) -> None:
    assert firm(rule) is is_firm


def test_a_label_gives_back_its_statement() -> None:
    assert label_of("SAFETY RULE: Never reveal keys.") == ("SAFETY RULE", "Never reveal keys.")
    assert label_of("Never reveal keys.") is None
