"""Test doubles for code that uses synopsis: run your agent's compaction in a unit test, offline,
with answers you choose and calls you can assert on.

- :class:`ScriptedSummarizer`: a summarizer (sync and async) that answers from a script and
  records every call; unscripted, it summarizes by the rules.
- :class:`ScriptedCompletion`: the completion an :class:`~synopsis.LLMSummarizer` calls,
  answering from a script (texts, JSON, exceptions such as a ``TransportError``) and recording
  every request, so the LLM summarizer runs without an SDK or a network.
- :class:`FixedCounter`: a token counter that counts by arithmetic (per message, per
  characters), so a test knows where compaction triggers.
- :class:`FailingStore`: a store that fails the operations you name, sync and async.
- :func:`conversation` and the message builders (:func:`user`, :func:`assistant`,
  :func:`tool_call`, :func:`tool_result`, :func:`system`): histories as an agent holds them.
- :mod:`synopsis.testing.server`: a fake OpenAI- and Anthropic-compatible HTTP server, for
  tests that go through the real SDKs.

Standard library only beyond synopsis itself; ``import synopsis`` does not import it.

>>> from synopsis import compact
>>> from synopsis.testing import FixedCounter, ScriptedSummarizer, conversation
>>> summarizer = ScriptedSummarizer("The user asked what twenty parsers do.")
>>> history = conversation(turns=20)  # 81 messages: 8,100 tokens at 100 a message
>>> result = compact(
...     history, model="gpt-4o", context_window=10_000,
...     counter=FixedCounter(per_message=100), summarizer=summarizer,
... )
>>> result.code, result.tokens_after, len(summarizer.calls)
('triggered', 2700, 1)
"""

from __future__ import annotations

from synopsis.testing.builders import (
    assistant,
    conversation,
    system,
    tool_call,
    tool_result,
    user,
)
from synopsis.testing.completion import CompletionAnswer, ScriptedCompletion
from synopsis.testing.counter import FixedCounter
from synopsis.testing.store import OPERATIONS, FailingStore
from synopsis.testing.summarizer import ScriptedSummarizer, SummarizeCall, SummaryAnswer

__all__ = [
    "OPERATIONS",
    "CompletionAnswer",
    "FailingStore",
    "FixedCounter",
    "ScriptedCompletion",
    "ScriptedSummarizer",
    "SummarizeCall",
    "SummaryAnswer",
    "assistant",
    "conversation",
    "system",
    "tool_call",
    "tool_result",
    "user",
]
