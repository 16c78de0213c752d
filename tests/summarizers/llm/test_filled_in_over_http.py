"""A poor model's summary of a real session is used, filled in, not thrown away: the real
openai SDK against the fake server, through ``synopsis.compact`` as a user would call it.

The fake server answers as SmolLM2-135M did on the 62-message customer-service session
(``make live``): valid JSON of the schema, a narrative and little else, missing the first
request and every identifier.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis.events import CompactionCompleted, SummarizerFellBack, SummaryFilledIn
from synopsis.summarizers.llm.gaps import Fact
from synopsis.testing.server import FakeLLMServer, chat_completion
from tests.summarizers.helpers import TRANSCRIPTS

if TYPE_CHECKING:
    from collections.abc import Iterator

SESSION = next(p for p in TRANSCRIPTS if p.name.startswith("taubench-airline-task2"))
SERVED = "smollm2-135m"
POOR: dict[str, Any] = {
    "narrative": "The customer talked to the airline agent about flights and the agent helped.",
    "key_points": ["The agent looked at the reservations"],
    "sections": {"current_work": ["Helping the customer"]},
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def items() -> list[dict[str, Any]]:
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def compact(server: FakeLLMServer, **options: Any) -> synopsis.CompactionResult:
    return synopsis.compact(
        items(),
        model="gpt-4o",
        summarizer="openai",
        base_url=server.base_url,
        summarizer_models=[SERVED],
        max_retries=0,
        force=True,
        environ={},
        **options,
    )


def test_a_poor_summary_of_the_customer_service_session_is_filled_in_and_used(server):
    server.add(chat_completion(json.dumps(POOR), model=SERVED))
    result = compact(server)
    assert result.compacted
    assert len(server.requests) == 1  # asked once: nothing is asked again
    assert not [e for e in result.events if isinstance(e, SummarizerFellBack)]
    record = result.record
    assert record is not None
    assert record.model == SERVED
    assert record.narrative == POOR["narrative"]
    # The conversation's first request stays where it is (a pinned head): the first request
    # of the summarized part is what the model left out.
    said = [i["content"] for i in items() if i["role"] == "user"]
    first = record.added[0]
    assert record.sections.primary_request[0] == first
    assert first in said
    assert first not in [m.get("content") for m in result.messages]
    assert {"omar_davis_3817", "JG7FMM", "LQ940Q", "2FBBAH"} <= set(
        " ".join(record.added).replace(",", " ").replace(".", " ").split()
    )
    (filled,) = [e for e in result.events if isinstance(e, SummaryFilledIn)]
    assert filled.model == SERVED
    assert filled.added[0] == str(Fact("first request", record.added[0]))
    assert filled.left_out == ()
    (done,) = [e for e in result.events if isinstance(e, CompactionCompleted)]
    summary = next(m for m in result.messages if "<synopsis-summary" in str(m.get("content")))
    text = str(summary["content"])
    assert POOR["narrative"] in text
    apart = text[text.index("Kept verbatim from the conversation") :]
    assert first in apart
    assert "JG7FMM" in apart
    assert done.summarized > 0
    assert synopsis.validate(result.messages, "openai") == []


def test_an_answer_that_is_no_summary_at_all_still_falls_back(server):
    server.add(chat_completion(json.dumps({"narrative": "I'm sorry, I can't help."}), model=SERVED))
    result = compact(server)
    assert result.record is not None
    assert result.record.model == "rules"
    (fell_back,) = [e for e in result.events if isinstance(e, SummarizerFellBack)]
    assert "a refusal" in fell_back.reason
    assert not [e for e in result.events if isinstance(e, SummaryFilledIn)]
