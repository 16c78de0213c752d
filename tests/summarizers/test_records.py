from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

import synopsis.summarizers
from synopsis.summarizers import (
    ActionItem,
    Coverage,
    Covers,
    Entities,
    Facets,
    RuleBasedSummarizer,
    Sections,
    SummaryRecord,
    Usage,
    summary_schema,
)
from synopsis.summarizers.records import MAX_FACET_ITEMS, MAX_KEY_POINTS, MAX_LIST_ITEMS
from tests.summarizers.helpers import coding_session

SCHEMA_FILE = Path(synopsis.summarizers.__file__).with_name("summary.schema.json")
REGENERATE = (
    '.venv/bin/python -c "import json; from synopsis.summarizers import summary_schema; '
    "open('src/synopsis/summarizers/summary.schema.json', 'w').write("
    "json.dumps(summary_schema(), indent=2, sort_keys=True, ensure_ascii=False) + '\\n')\""
)


def full_record() -> SummaryRecord:
    return SummaryRecord(
        depth=2,
        parent_id="a" * 32,
        narrative="Two rounds of work.",
        key_points=("[✓ read_file: File: a.py | Lines: 120]",),
        facets=Facets(
            participants=("user", "assistant"),
            decisions=("use httpx",),
            action_items=(ActionItem(owner="assistant", task="write docs", due="Friday"),),
            unresolved=("flaky test",),
            entities=Entities(files=("a.py",), symbols=("Retry",), versions=("1.2.3",)),
        ),
        sections=Sections(primary_request=("Fix a.py",), next_step="Run the tests"),
        covers=Covers([Coverage(id="m0-abc", sha256="0" * 64)]),
        tokens_in=1000,
        tokens_out=100,
        model="gpt-4o-mini",
        usage=Usage(prompt_tokens=1000, completion_tokens=100, total_tokens=1100),
        truncated=True,
    )


def test_the_committed_schema_is_the_generated_one() -> None:
    committed = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert committed == summary_schema(), f"regenerate it: {REGENERATE}"


def test_the_schema_names_every_part_of_a_record() -> None:
    schema = summary_schema()
    assert set(schema["properties"]) == set(SummaryRecord.model_fields)
    assert {"ActionItem", "Coverage", "Entities", "Facets", "Sections", "Usage"} <= set(
        schema["$defs"]
    )
    assert schema["properties"]["key_points"]["maxItems"] == MAX_KEY_POINTS


@pytest.mark.parametrize(
    "record",
    [full_record(), SummaryRecord(), RuleBasedSummarizer().summarize(coding_session())],
    ids=["full", "empty", "rules"],
)
def test_json_round_trip_gives_an_equal_record(record: SummaryRecord) -> None:
    assert SummaryRecord.model_validate_json(record.model_dump_json()) == record


def test_defaults_are_a_fresh_id_and_the_current_utc_time() -> None:
    before = datetime.now(UTC)
    a, b = SummaryRecord(), SummaryRecord()
    assert a.id != b.id
    assert len(a.id) == 32
    assert int(a.id, 16) >= 0
    assert before <= a.created_at <= datetime.now(UTC)
    assert a.model == "rules"
    assert a.usage == Usage()
    assert not a.truncated


def test_times_are_stored_in_utc() -> None:
    local = datetime(2025, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    record = SummaryRecord(created_at=local)
    assert record.created_at.utcoffset() == timedelta(0)
    assert record.created_at == local


def test_a_naive_time_is_rejected() -> None:
    with pytest.raises(ValidationError):
        SummaryRecord(created_at=datetime(2025, 1, 1))


def test_key_points_are_capped() -> None:
    SummaryRecord(key_points=("x",) * MAX_KEY_POINTS)
    with pytest.raises(ValidationError):
        SummaryRecord(key_points=("x",) * (MAX_KEY_POINTS + 1))


def test_lists_are_capped_far_above_any_budget() -> None:
    # The token budget decides what a summary keeps; the cap only bounds a runaway record.
    assert Sections(user_messages=("r",) * (MAX_FACET_ITEMS + 1)).user_messages
    with pytest.raises(ValidationError):
        Entities(files=("a.py",) * (MAX_LIST_ITEMS + 1))
    with pytest.raises(ValidationError):
        Facets(decisions=("d",) * (MAX_LIST_ITEMS + 1))


@pytest.mark.parametrize(
    ("depth", "parent"), [(0, "a" * 32), (1, None)], ids=["root-with-parent", "child-orphan"]
)
def test_a_parent_exists_exactly_below_the_root(depth: int, parent: str | None) -> None:
    with pytest.raises(ValidationError, match="parent_id"):
        SummaryRecord(depth=depth, parent_id=parent)


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "not-hex"},
        {"depth": -1, "parent_id": "x"},
        {"tokens_in": -5},
        {"covers": [{"id": "m0", "sha256": "xyz"}]},
        {"unknown_field": 1},
    ],
)
def test_invalid_records_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        SummaryRecord.model_validate(bad)


def test_records_are_frozen() -> None:
    record = full_record()
    with pytest.raises(ValidationError):
        record.depth = 5
    assert hash(record.facets.action_items[0]) == hash(
        ActionItem(owner="assistant", task="write docs", due="Friday")
    )
