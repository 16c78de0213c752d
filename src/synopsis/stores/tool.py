"""The recall tool: a definition to hand the model in each provider's shape, and the handler
that answers its calls from a store.

The handler never raises for what the model sent: a bad call gets a sentence saying what was
wrong and how to call it, which the model reads as the tool result and can act on.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from synopsis.errors import ConfigurationError

if TYPE_CHECKING:
    from synopsis.stores.protocols import AsyncStore, Store
    from synopsis.stores.records import SearchHit, StoredMessage

__all__ = ["MAX_LIMIT", "RECALL_TOOL_NAME", "ahandle_recall", "handle_recall", "recall_tool"]

RECALL_TOOL_NAME = "recall_history"
MAX_LIMIT = 50
"""A search asking for more hits gets this many: the result must fit the context it serves."""
DEFAULT_LIMIT = 10

_DESCRIPTION = (
    "Look up earlier messages of this conversation that were replaced by a summary. "
    "Pass `query` to search their text: you get ids, positions and short snippets, best match "
    "first. Pass `ids` (from a search or the summary) or a `start`/`stop` position range to "
    "get the messages themselves, exactly as they were."
)
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to search for in earlier messages."},
        "ids": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Ids of the messages to recall.",
        },
        "start": {"type": "integer", "minimum": 0, "description": "First position to recall."},
        "stop": {"type": "integer", "minimum": 0, "description": "Position to stop before."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": "At most this many search hits.",
        },
    },
    "additionalProperties": False,
}
_USAGE = (
    'Call it with {"query": "words to find"}, {"ids": ["<id>", ...]} '
    'or {"start": <position>, "stop": <position>}.'
)

Provider = Literal["openai", "anthropic", "responses"]


def recall_tool(provider: Provider = "openai") -> dict[str, Any]:
    """The recall tool's definition for ``provider``: OpenAI chat completions, the Responses
    API or Anthropic Messages. A fresh copy each time."""
    parameters = copy.deepcopy(_PARAMETERS)
    if provider == "openai":
        return {
            "type": "function",
            "function": {
                "name": RECALL_TOOL_NAME,
                "description": _DESCRIPTION,
                "parameters": parameters,
            },
        }
    if provider == "responses":
        return {
            "type": "function",
            "name": RECALL_TOOL_NAME,
            "description": _DESCRIPTION,
            "parameters": parameters,
        }
    if provider == "anthropic":
        return {"name": RECALL_TOOL_NAME, "description": _DESCRIPTION, "input_schema": parameters}
    raise ConfigurationError(
        f"unknown provider {provider!r} for the recall tool; expected openai, responses "
        "or anthropic"
    )


@dataclass(frozen=True, slots=True)
class _Call:
    ids: tuple[str, ...] | None = None
    start: int | None = None
    stop: int | None = None
    query: str | None = None
    limit: int = DEFAULT_LIMIT


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse(arguments: Mapping[str, Any] | str) -> _Call | str:
    """The call, or the sentence explaining why it is not one."""
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return f"The arguments are not valid JSON ({exc}). {_USAGE}"
    if not isinstance(arguments, Mapping):
        return f"The arguments must be a JSON object, not {type(arguments).__name__}. {_USAGE}"
    unknown = sorted(set(arguments) - set(_PARAMETERS["properties"]))
    if unknown:
        return f"Unknown argument(s): {', '.join(map(str, unknown))}. {_USAGE}"
    ids, query = arguments.get("ids"), arguments.get("query")
    start, stop = arguments.get("start"), arguments.get("stop")
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(ids, str):
        ids = [ids]  # one id sent bare: what was meant is plain
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        return f"`ids` must be a list of message id strings. {_USAGE}"
    for name, value in (("start", start), ("stop", stop)):
        if value is not None and not _whole(value):
            return f"`{name}` must be a whole number of at least 0, got {value!r}. {_USAGE}"
    if query is not None and not isinstance(query, str):
        return f"`query` must be a string, got {query!r}. {_USAGE}"
    if not _whole(limit) or limit < 1:
        return f"`limit` must be a whole number of at least 1, got {limit!r}."
    ranged = start is not None or stop is not None
    if query is not None and (ids is not None or ranged):
        return f"Search with `query`, or recall with `ids` or `start`/`stop`: not both. {_USAGE}"
    if ids is not None and ranged:
        return f"Recall with `ids` or with `start`/`stop`, not both. {_USAGE}"
    if query is None and ids is None and not ranged:
        return f"Nothing asked. {_USAGE}"
    return _Call(None if ids is None else tuple(ids), start, stop, query, min(limit, MAX_LIMIT))


def _dumps(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate in a stored item: escaped, the result can still be sent.
        return json.dumps(value)
    return text


def _item(data: str) -> object:
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return data


def _recalled(call: _Call, messages: list[StoredMessage]) -> str:
    out: dict[str, object] = {
        "messages": [
            {"id": m.id, "position": m.position, "role": m.role, "item": _item(m.data)}
            for m in messages
        ]
    }
    if call.ids is not None:
        found = {m.id for m in messages}
        missing = [i for i in dict.fromkeys(call.ids) if i not in found]
        if missing:
            out["not_found"] = missing
    if not messages:
        out["note"] = "No stored message matched. Search with a query to find ids."
    return _dumps(out)


def _found(call: _Call, hits: list[SearchHit]) -> str:
    out: dict[str, object] = {
        "query": call.query,
        "hits": [
            {
                "id": h.message.id,
                "position": h.message.position,
                "role": h.message.role,
                "score": round(h.score, 4),
                "snippet": h.snippet,
            }
            for h in hits
        ],
    }
    if not hits:
        out["note"] = "No stored message holds these words. Try other words."
    return _dumps(out)


def handle_recall(store: Store, session_id: str, arguments: Mapping[str, Any] | str) -> str:
    """Run a recall call (``arguments`` as the model sent them: a mapping or JSON text) and
    return the tool result: JSON of the recalled messages (id, position, role, the original
    wire item) or of the search hits, or a sentence on what was wrong with the call. Store
    failures raise :class:`~synopsis.errors.StoreError`: they are not the model's to fix."""
    call = _parse(arguments)
    if isinstance(call, str):
        return call
    if call.query is not None:
        return _found(call, store.search(session_id, call.query, limit=call.limit))
    messages = store.recall(session_id, ids=call.ids, start=call.start, stop=call.stop)
    return _recalled(call, messages)


async def ahandle_recall(
    store: AsyncStore, session_id: str, arguments: Mapping[str, Any] | str
) -> str:
    """:func:`handle_recall` for an :class:`~synopsis.stores.protocols.AsyncStore`."""
    call = _parse(arguments)
    if isinstance(call, str):
        return call
    if call.query is not None:
        return _found(call, await store.asearch(session_id, call.query, limit=call.limit))
    messages = await store.arecall(session_id, ids=call.ids, start=call.start, stop=call.stop)
    return _recalled(call, messages)
