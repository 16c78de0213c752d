"""What the adapters' clearing tests share: telling a cleared tool output by its placeholder,
and running the recall the placeholder names."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from synopsis.planning import CLEARED_MARKER
from synopsis.stores import Store, handle_recall

if TYPE_CHECKING:
    from synopsis.stores import AsyncStore

_RECALL = re.compile(r"recall_history with (\{.*\}) brings it back\]$")


def cleared(text: object) -> bool:
    """Whether a tool output is a clearing's placeholder."""
    return isinstance(text, str) and text.startswith(CLEARED_MARKER)


def recalled(store: Store | AsyncStore | None, session_id: str, placeholder: object) -> str:
    """The originals the recall named in ``placeholder`` gives back, as JSON text."""
    assert isinstance(store, Store)
    assert isinstance(placeholder, str)
    found = _RECALL.search(placeholder)
    assert found is not None, placeholder
    answer = json.loads(handle_recall(store, session_id, found.group(1)))
    items: list[Any] = [m["item"] for m in answer["messages"]]
    assert items, placeholder
    return json.dumps(items)
