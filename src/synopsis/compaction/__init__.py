"""The pipeline that people call: :func:`compact`, :func:`acompact` and :class:`Compactor`.

One call normalises the history (any supported format; repaired where the fix is
unambiguous), asks the governor whether to compact, runs the cheap reductions, summarizes the
older part in bounded passes, rebuilds the history for the target provider, verifies that it
is valid and fits, saves the replaced originals to the store in one transaction, and returns
the history in the caller's own format with what happened (:class:`CompactionResult`).
"""

from __future__ import annotations

from synopsis.compaction.compactor import (
    Compactor,
    StoreOption,
    SummarizerOption,
    SystemPrompt,
    acompact,
    compact,
)
from synopsis.compaction.result import CompactionResult

__all__ = [
    "CompactionResult",
    "Compactor",
    "StoreOption",
    "SummarizerOption",
    "SystemPrompt",
    "acompact",
    "compact",
]
