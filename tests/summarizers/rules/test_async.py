"""``RuleBasedSummarizer.asummarize`` does its work in a worker thread, so that an event loop
awaiting it goes on serving its other tasks, and gives what ``summarize`` gives."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from synopsis.summarizers import RuleBasedSummarizer
from tests.summarizers.helpers import coding_session

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message
    from synopsis.summarizers import SummaryRecord


class Watched(RuleBasedSummarizer):
    """Notes the thread each summary is written in."""

    threads: list[threading.Thread]

    def summarize(self, messages: Sequence[Message], **options: Any) -> SummaryRecord:
        self.threads.append(threading.current_thread())
        return super().summarize(messages, **options)


def test_asummarize_works_in_a_thread_and_gives_what_summarize_gives() -> None:
    summarizer = Watched()
    summarizer.threads = []
    history = coding_session()
    record = asyncio.run(summarizer.asummarize(history, max_tokens=400))
    (thread,) = summarizer.threads
    assert thread is not threading.main_thread()
    alone = summarizer.summarize(history, max_tokens=400)
    assert record.model_copy(update={"id": alone.id, "created_at": alone.created_at}) == alone
