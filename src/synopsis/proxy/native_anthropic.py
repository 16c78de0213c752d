"""Anthropic's context management done by the proxy, for an upstream that has none.

A ``/v1/messages`` request that carries ``context_management`` has it applied here, before
the usual compaction: its ``compaction`` blocks expanded (all before the last one dropped,
as the API does), then each edit in the order given. The field and its ``anthropic-beta``
values are taken off the request; what was done is given back by
:mod:`.native_answers` (``context_management.applied_edits``, a ``compaction`` block).

Tool outputs are cleared by synopsis's own clearing tier, with the request's ``keep``,
``clear_at_least``, ``exclude_tools`` and ``clear_tool_inputs``, and a compaction is
synopsis's summary: both keep the originals in the store, under the request's session with
``:clear`` or ``:compact`` added.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from starlette.requests import Request

from synopsis.formats import decode
from synopsis.messages import is_summary_text
from synopsis.planning.clearing import CLEARED_MARKER
from synopsis.proxy.defaults import UPSTREAMS
from synopsis.proxy.encoding import dumps, exact, inexact
from synopsis.proxy.native_edits import (
    BETAS,
    ClearThinking,
    ClearToolUses,
    Compact,
    Refused,
    read_edits,
)

if TYPE_CHECKING:
    from synopsis.proxy.errors import Api
    from synopsis.proxy.exchange import Exchange
    from synopsis.proxy.relay import Departure

__all__ = [
    "MODES",
    "Mode",
    "Native",
    "clearing",
    "emulates",
    "expanded",
    "prepare",
    "thinking_cleared",
]

Mode = Literal["emulate", "pass", "auto"]
MODES: tuple[Mode, ...] = ("emulate", "pass", "auto")
_KEPT = "synopsis:kept="
"""How a compaction block's ``encrypted_content`` (opaque to the client) names the messages
kept whole after the summary: their count and a digest of them."""
_THINKING = frozenset({"thinking", "redacted_thinking"})
_UNBOUNDED = 1_000_000_000
"""The window of the compactors that apply an edit: the edit decides how far, not a window
(the usual compaction fits the result to the model's afterwards)."""
_AS_ASKED = {
    "context_window": _UNBOUNDED,
    "trigger": "tokens:1",
    "truncate_args": False,
    "dedupe_results": False,
    "message_threshold": None,
}


def emulates(mode: Mode, upstream: str, api: Api = "anthropic") -> bool:
    """Whether the proxy does ``api``'s context management itself for its upstream at
    ``upstream``: always, never, or (``auto``) unless it is that provider's own API."""
    if mode == "auto":
        return urlsplit(upstream).hostname != urlsplit(UPSTREAMS[api]).hostname
    return mode == "emulate"


@dataclass(slots=True)
class Native:
    """What the proxy did to one request, for its answer."""

    applied: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    """The summary of a compaction made for this request (its ``compaction`` block)."""
    kept: str | None = None
    """The block's ``encrypted_content``: what was kept whole after the summary."""
    pause: bool = False
    tokens_before: int = 0

    def block(self) -> dict[str, Any]:
        return {"type": "compaction", "content": self.summary, "encrypted_content": self.kept}


def _counter(exchange: Exchange) -> Any:  # noqa: ANN401 - a TokenCounter
    return exchange.state.compactors.for_model(exchange.model, exchange.upstream).setup.counter


def _tokens(exchange: Exchange, items: list[Any]) -> int:
    """The request's input tokens with ``items`` as its history, as synopsis counts them."""
    counter = _counter(exchange)
    messages = decode(items, "anthropic", system=exchange.system).messages
    tools = exchange.tools if isinstance(exchange.tools, list) else None
    return int(counter.count_messages(messages, tools=tools))


ON_DEMAND = (
    "on-demand compaction (the top-level compaction field, beta compact-2026-09-04) is not "
    "emulated by synopsis in front of this upstream: use context_management with "
    "compact_20260112, or send it to Anthropic's own API"
)


async def prepare(
    exchange: Exchange, departure: Departure, *, counting: bool = False
) -> Native | None:
    """Apply the request's edits to ``exchange`` (its body, history and headers), or None
    when it has no ``context_management`` (it goes on untouched, compaction blocks and all:
    the API reads them only with the field, which is then on every request). Raises
    :class:`~.native_edits.Refused` for edits the proxy cannot emulate faithfully.
    ``counting``: a ``count_tokens`` request, which never compacts (as the API's)."""
    body, items = exchange.body, exchange.items
    if "compaction" in body:
        if not counting:
            raise Refused(ON_DEMAND)
        # count_tokens accepts it and ignores it, as the API's does: not sent on.
        body = exchange.body = {k: v for k, v in body.items() if k != "compaction"}
        exchange.raw = dumps(body)
    if items is None or "context_management" not in body:
        return None
    edits = read_edits(body["context_management"])
    native = Native()
    items = expanded(items)
    for edit in edits:
        if isinstance(edit, ClearThinking):
            items = _clear_thinking(exchange, native, edit, items)
        elif isinstance(edit, ClearToolUses):
            items = await _clear_tool_uses(exchange, departure, native, edit, items)
        elif not counting:
            items = await _compact(exchange, departure, native, edit, items)
    _replace(exchange, items)
    return native


# -- the compaction blocks a client sends back ---------------------------------------------------


def _holds_block(item: object) -> bool:
    content = item.get("content") if isinstance(item, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in content
    )


def _digest(items: list[Any]) -> str:
    return hashlib.sha256(dumps(items, sort_keys=True)).hexdigest()[:16]


def expanded(items: list[Any]) -> list[Any]:
    """The history as the API reads it: everything before the last compaction block with a
    summary dropped, that block a user message holding its summary (after it, the messages
    it says were kept whole, when the client still has them); blocks without one (a failed
    compaction) are no-ops."""
    at = None
    for i, item in enumerate(items):
        if _holds_block(item):
            for j, block in enumerate(item["content"]):
                if _is_block(block) and isinstance(block.get("content"), str):
                    at = (i, j)
    out = list(items)
    if at is not None:
        i, j = at
        block = items[i]["content"][j]
        summary: dict[str, Any] = {"type": "text", "text": block["content"]}
        if "cache_control" in block:
            summary["cache_control"] = block["cache_control"]
        rest = {**items[i], "content": items[i]["content"][j + 1 :]}
        out = [{"role": "user", "content": [summary]}, *_kept(items[:i], block), rest]
        out.extend(items[i + 1 :])
    return _joined([_without_blocks(item) for item in out])


def _is_block(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "compaction"


def _kept(before: list[Any], block: dict[str, Any]) -> list[Any]:
    """The messages a block of the proxy's says were kept whole, when they are still there
    as they were."""
    mark = block.get("encrypted_content")
    if not isinstance(mark, str) or not mark.startswith(_KEPT):
        return []
    count, _, digest = mark.removeprefix(_KEPT).partition(":")
    if not count.isdigit() or not 0 < int(count) <= len(before):
        return []
    kept = before[-int(count) :]
    return kept if _digest(kept) == digest else []


def _without_blocks(item: Any) -> Any:  # noqa: ANN401 - a client's message
    if not _holds_block(item):
        return item
    return {**item, "content": [b for b in item["content"] if not _is_block(b)]}


def _joined(items: list[Any]) -> list[Any]:
    """``items`` without the messages left empty, and two user messages in a row (where a
    summary meets the client's next message) made one."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and item.get("content") == []:
            continue
        if out and _role(out[-1]) == _role(item) == "user":
            out[-1] = {**out[-1], "content": [*_blocks(out[-1]), *_blocks(item)]}
            continue
        out.append(item)
    return out


def _role(item: object) -> object:
    return item.get("role") if isinstance(item, dict) else None


def _blocks(item: dict[str, Any]) -> list[Any]:
    content = item.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


# -- the edits -----------------------------------------------------------------------------------


def _clear_thinking(
    exchange: Exchange, native: Native, edit: ClearThinking, items: list[Any]
) -> list[Any]:
    out, cleared = thinking_cleared(items, edit.keep)
    if cleared:
        saved = _tokens(exchange, items) - _tokens(exchange, out)
        native.applied.append(
            {
                "type": "clear_thinking_20251015",
                "cleared_thinking_turns": cleared,
                "cleared_input_tokens": max(saved, 0),
            }
        )
    return out


def thinking_cleared(items: list[Any], keep: int | None) -> tuple[list[Any], int]:
    """``items`` with the thinking of all assistant turns but the newest ``keep`` (None: all)
    dropped, and how many turns lost theirs. The current tool loop's (the messages after
    the last user message that is not only tool results) is never dropped: the API refuses
    its final turn without it; nor that of a turn it would leave empty."""
    loop = next(
        (i for i in range(len(items) - 1, -1, -1) if _role(items[i]) == "user" and _asks(items[i])),
        -1,
    )
    turns = [
        i
        for i, item in enumerate(items)
        if _role(item) == "assistant" and any(_thinking(b) for b in _blocks(item))
    ]
    dropped = turns[:-keep] if keep is not None else []
    out = list(items)
    cleared = 0
    for i in dropped:
        rest = [b for b in _blocks(items[i]) if not _thinking(b)]
        if i > loop or not rest:
            continue
        out[i] = {**items[i], "content": rest}
        cleared += 1
    return out, cleared


def _asks(item: dict[str, Any]) -> bool:
    """Whether a user message says something (not only tool results)."""
    return any(not (isinstance(b, dict) and b.get("type") == "tool_result") for b in _blocks(item))


def _thinking(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") in _THINKING


def _uses(items: list[Any]) -> int:
    return sum(
        1
        for item in items
        if _role(item) == "assistant"
        for b in _blocks(item)
        if isinstance(b, dict) and b.get("type") == "tool_use"
    )


async def _clear_tool_uses(
    exchange: Exchange, departure: Departure, native: Native, edit: ClearToolUses, items: list[Any]
) -> list[Any]:
    """Old tool outputs cleared by synopsis's clearing tier, once the trigger is reached."""
    before = _tokens(exchange, items)
    reached = _uses(items) if edit.trigger_kind == "tool_uses" else before
    if reached < edit.trigger:
        return items
    compactor = exchange.state.compactors.variant(exchange.model, **clearing(edit))
    result = await departure.race(
        compactor.acompact(
            items,
            system=exchange.system,  # type: ignore[arg-type]
            tools=exchange.tools,  # type: ignore[arg-type]
            session_id=f"{exchange.session}:clear",
            format="anthropic",
            force=True,
            threaded="compaction",
        )
    )
    out = list(result.messages)
    cleared = _placeholders(out) - _placeholders(items)
    if cleared > 0:
        native.applied.append(
            {
                "type": "clear_tool_uses_20250919",
                "cleared_tool_uses": cleared,
                "cleared_input_tokens": max(before - _tokens(exchange, out), 0),
            }
        )
        return out
    return items


def clearing(edit: ClearToolUses) -> dict[str, Any]:
    """The compaction options that make synopsis's clearing tier do what ``edit`` asks."""
    return {
        **_AS_ASKED,
        "strategy": "clear",
        "target_ratio": 1e-9,  # every output older than ``keep``, as the API clears
        "clear_keep_uses": edit.keep,
        "clear_keep_tokens": 0,
        "clear_at_least": edit.at_least,
        "clear_exclude_tools": edit.exclude,
        "clear_tool_inputs": edit.inputs,
    }


def _placeholders(items: list[Any]) -> int:
    return sum(
        1
        for item in items
        if _role(item) == "user"
        for b in _blocks(item)
        if isinstance(b, dict) and b.get("type") == "tool_result" and _cleared(b.get("content"))
    )


def _cleared(content: object) -> bool:
    if isinstance(content, list):
        content = next((b.get("text") for b in content if isinstance(b, dict)), None)
    return isinstance(content, str) and content.startswith(CLEARED_MARKER)


async def _compact(
    exchange: Exchange, departure: Departure, native: Native, edit: Compact, items: list[Any]
) -> list[Any]:
    """Over the trigger, the history summarized by synopsis (the newest turn kept whole,
    which the block says): the summary and that turn are what the upstream gets."""
    before = _tokens(exchange, items)
    if before < edit.trigger:
        return items
    compactor = exchange.state.compactors.variant(
        exchange.model, **_AS_ASKED, keep="messages:0", protect_first_user=False
    )
    result = await departure.race(
        compactor.acompact(
            items,
            system=exchange.system,  # type: ignore[arg-type]
            tools=exchange.tools,  # type: ignore[arg-type]
            session_id=f"{exchange.session}:compact",
            format="anthropic",
            force=True,
            instructions=edit.instructions,
            threaded="compaction",
        )
    )
    out = list(result.messages)
    at = next((i for i, m in enumerate(out) if is_summary_text(_text(m))), None)
    if at is None:
        return items  # nothing summarized
    kept = out[at + 1 :]
    native.summary = _text(out[at])
    native.kept = f"{_KEPT}{len(kept)}:{_digest(kept)}"
    native.pause = edit.pause
    native.tokens_before = before
    return out


def _text(item: object) -> str:
    blocks = _blocks(item) if isinstance(item, dict) else []
    return "".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text")


# -- the request as forwarded ---------------------------------------------------------------------


def _replace(exchange: Exchange, items: list[Any]) -> None:
    """``exchange`` with ``items`` for its history, without ``context_management`` and the
    ``anthropic-beta`` values it came with."""
    source = exact(exchange.raw) if inexact(exchange.raw) else exchange.body
    body = {k: v for k, v in source.items() if k != "context_management"}
    body["messages"] = items
    exchange.body = body
    exchange.items = items
    exchange.raw = dumps(body)
    request = exchange.request
    headers = [_unbeta(k, v) for k, v in request.headers.raw]
    scope = {**request.scope, "headers": [h for h in headers if h[1]]}
    exchange.request = Request(scope, request.receive)


def _unbeta(key: bytes, value: bytes) -> tuple[bytes, bytes]:
    if key.lower() != b"anthropic-beta":
        return key, value
    names = [n.strip() for n in value.split(b",")]
    return key, b",".join(n for n in names if n and n.decode("latin-1") not in BETAS)
