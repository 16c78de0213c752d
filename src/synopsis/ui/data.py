"""What the operator's page shows, read from a store: plain values the templates lay out.

Every figure comes from the store, never from the process serving the page, so replicas
sharing a PostgreSQL store show the whole fleet and ``synopsis ui`` shows what a library
wrote. The per-request figures (:class:`~synopsis.stores.requests.RequestRecord`) exist only
where a proxy wrote them; a library's store shows its sessions, summaries and originals.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from synopsis.compaction.projection import Projection
from synopsis.formats import decode
from synopsis.messages import message_text
from synopsis.models import context_window, lookup
from synopsis.pricing import ANTHROPIC, OPENAI, Prices
from synopsis.summarizers.render import render_compact
from synopsis.ui.charts import RequestPoint, Series

if TYPE_CHECKING:
    from synopsis.planning.triggers import Trigger
    from synopsis.stores._base import StoreBase
    from synopsis.stores.records import SessionState, StoredMessage
    from synopsis.stores.requests import RequestRecord, RequestRollup
    from synopsis.summarizers.records import SummaryRecord

__all__ = [
    "RANGES",
    "SORTS",
    "Limits",
    "Overview",
    "SessionPage",
    "SessionRow",
    "SessionView",
    "limits_for",
    "overview",
    "price_of",
    "search",
    "session_page",
    "session_view",
]

Limits = Callable[[str], tuple[int | None, int | None]]
"""A model's window and the tokens at which it compacts (``None`` where unknown)."""

RANGES: dict[str, tuple[timedelta, Literal["hour", "day"]]] = {
    "24h": (timedelta(hours=24), "hour"),
    "7d": (timedelta(days=7), "day"),
    "30d": (timedelta(days=30), "day"),
}
"""The overview's spans and the bucket each is drawn in."""

SORTS = ("last_seen", "length", "compactions", "saved")
PER_PAGE = 50
ORIGINALS_PER_PAGE = 50
CHART_REQUESTS = 2000
"""The newest requests a session's chart draws (the chart thins them further)."""
_MARK = re.compile(r"\*\*(.+?)\*\*")
_CLEARED_PREFIX = "r-"


def limits_for(
    trigger: Trigger, *, window: int | None = None, windows: dict[str, int] | None = None
) -> Limits:
    """The window and trigger tokens of each model as a compactor with these options would
    take them: ``windows`` per model, else ``window`` for all, else the model table (an
    unknown model: ``None``, since the page would only be guessing)."""
    given = dict(windows or {})

    def limits(model: str) -> tuple[int | None, int | None]:
        found = given.get(model, window)
        if found is None and model and lookup(model) is not None:
            found = context_window(model)
        if found is None:
            return None, None
        return found, trigger.token_threshold(found)

    return limits


def price_of(format: str) -> Prices:
    """The list prices a session in ``format`` is priced at: Anthropic's for its Messages
    API, OpenAI's for the rest (the presets of :mod:`synopsis.pricing`)."""
    return ANTHROPIC if format == "anthropic" else OPENAI


def _cost(tokens: int, shared: int, prices: Prices) -> float:
    """Dollars for ``tokens`` of input of which ``shared`` are read from the cache."""
    shared = min(max(shared, 0), tokens)
    fresh = tokens - shared
    return (shared * prices.cached + fresh * (prices.input + prices.write_premium)) / 1_000_000


@dataclass(frozen=True, slots=True)
class Figures:
    """Totals over some requests."""

    requests: int = 0
    compacted: int = 0
    summarizer_calls: int = 0
    summarizer_seconds: float = 0.0
    fallbacks: int = 0
    errors: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    cost_before: float = 0.0
    cost_after: float = 0.0

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def saved_share(self) -> float:
        return self.saved / self.tokens_before if self.tokens_before else 0.0

    @property
    def cost_saved(self) -> float:
        return self.cost_before - self.cost_after

    @classmethod
    def of(cls, rollups: Sequence[RequestRollup]) -> Figures:
        before = after = 0.0
        for r in rollups:
            prices = price_of(r.format)
            before += _cost(r.tokens_before, r.client_shared_tokens, prices)
            after += _cost(r.tokens_after, r.shared_tokens, prices)
        return cls(
            requests=sum(r.requests for r in rollups),
            compacted=sum(r.compacted for r in rollups),
            summarizer_calls=sum(r.summarizer_calls for r in rollups),
            summarizer_seconds=sum(r.summarizer_seconds for r in rollups),
            fallbacks=sum(r.fallbacks for r in rollups),
            errors=sum(r.errors for r in rollups),
            tokens_before=sum(r.tokens_before for r in rollups),
            tokens_after=sum(r.tokens_after for r in rollups),
            cost_before=before,
            cost_after=after,
        )


@dataclass(frozen=True, slots=True)
class Overview:
    """The first page: the store's sessions and the requests of ``span``."""

    span: str
    sessions: int
    compactions: int
    summarized_tokens: int
    figures: Figures
    times: list[datetime]
    tokens: list[Series]
    counts: list[Series]
    errors: list[tuple[str, int]]
    models: list[tuple[str, Figures]]
    recorded: bool
    """Whether the store holds any request records at all (a library's store holds none)."""


def overview(store: StoreBase, span: str, now: datetime | None = None) -> Overview:
    length, bucket = RANGES[span]
    now = now or datetime.now(UTC)
    since = now - length
    states = store.states()
    buckets = store.request_rollup(bucket, since=since)
    models = store.request_rollup("model", since=since)
    times = [datetime.fromisoformat(b.key) for b in buckets]
    return Overview(
        span=span,
        sessions=len(states),
        compactions=sum(s.compactions for s in states),
        summarized_tokens=sum(s.tokens_summarized for s in states),
        figures=Figures.of(models),
        times=times,
        tokens=[
            Series("sent by clients", [b.tokens_before for b in buckets], "s-before"),
            Series("sent upstream", [b.tokens_after for b in buckets], "s-after"),
        ],
        counts=[
            Series("requests", [b.requests for b in buckets], "s-before"),
            Series("compacted", [b.compacted for b in buckets], "s-after"),
        ],
        errors=[(r.key, r.requests) for r in store.request_rollup("error", since=since)],
        models=[(r.key, Figures.of([r])) for r in models],
        recorded=bool(models) or bool(store.requests(limit=1)),
    )


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    model: str
    format: str
    last_seen: datetime | None
    length: int
    """Its requests, or the originals stored for a session no proxy recorded (a library's)."""
    compactions: int
    requests: int
    saved: int
    stored: int


@dataclass(frozen=True, slots=True)
class SessionPage:
    rows: list[SessionRow]
    total: int
    page: int
    pages: int
    q: str
    sort: str
    order: str


def _rows(store: StoreBase) -> list[SessionRow]:
    states = {s.session_id: s for s in store.states()}
    # The counts alone: stats() reads every stored byte to size the sessions.
    counts = store.message_counts()
    rolled = {r.key: r for r in store.request_rollup("session")}
    rows = []
    for sid in sorted(states.keys() | rolled.keys()):
        state, roll = states.get(sid), rolled.get(sid)
        times = (roll.last_at if roll else None, state.updated_at if state else None)
        seen = [t for t in times if t is not None]
        stored = counts.get(sid, 0)
        rows.append(
            SessionRow(
                id=sid,
                model=roll.model if roll else "",
                format=roll.format if roll else "",
                last_seen=max(seen) if seen else None,
                length=roll.requests if roll else stored,
                compactions=state.compactions if state else 0,
                requests=roll.requests if roll else 0,
                saved=(roll.tokens_before - roll.tokens_after) if roll else 0,
                stored=stored,
            )
        )
    return rows


_EPOCH = datetime.min.replace(tzinfo=UTC)


def _sort_key(sort: str) -> Callable[[SessionRow], tuple[object, str]]:
    if sort == "length":
        return lambda r: (r.length, r.id)
    if sort == "compactions":
        return lambda r: (r.compactions, r.id)
    if sort == "saved":
        return lambda r: (r.saved, r.id)
    return lambda r: (r.last_seen or _EPOCH, r.id)


def session_page(
    store: StoreBase, *, q: str = "", sort: str = "last_seen", order: str = "desc", page: int = 1
) -> SessionPage:
    """The sessions whose id, model or format holds ``q`` (case-insensitive), sorted,
    :data:`PER_PAGE` a page."""
    sort = sort if sort in SORTS else "last_seen"
    order = order if order in ("asc", "desc") else "desc"
    needle = q.strip().casefold()
    rows = [
        r
        for r in _rows(store)
        if not needle or any(needle in v.casefold() for v in (r.id, r.model, r.format))
    ]
    rows.sort(key=_sort_key(sort), reverse=order == "desc")
    pages = max(1, math.ceil(len(rows) / PER_PAGE))
    page = min(max(page, 1), pages)
    start = (page - 1) * PER_PAGE
    return SessionPage(rows[start : start + PER_PAGE], len(rows), page, pages, q, sort, order)


@dataclass(frozen=True, slots=True)
class Original:
    """A stored message as the page shows it: its recall position and id, and, for a cleared
    tool output, what stood in its place."""

    position: int
    id: str
    role: str
    text: str
    cleared: bool
    placeholder: str = ""
    """What stands in its place in the history now, where the session's state still says."""


@dataclass(frozen=True, slots=True)
class Replaced:
    """One compaction: its summary (``None`` for one that only cleared or reduced) and the
    originals it replaced, a page of them."""

    id: str
    at: datetime
    summary: SummaryRecord | None
    summary_text: str
    originals: list[Original]
    total: int
    page: int
    pages: int
    positions: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class SessionView:
    id: str
    state: SessionState | None
    model: str
    format: str
    window: int | None
    trigger: int | None
    points: list[RequestPoint]
    figures: Figures
    compactions: list[Replaced]
    events: list[tuple[datetime, str]]
    stored: int
    recorded: bool = field(default=False)


def _originals(
    messages: Sequence[StoredMessage], *, summarized: bool, smaller: Mapping[str, str]
) -> list[Original]:
    """A compaction without a summary cleared or shortened its messages in place: its tool
    outputs (stored under ``r-<call id>``) stand in the history as placeholders, whose text
    the session's projection keeps for the messages its newest compaction made smaller."""
    return [
        Original(
            m.position,
            m.id,
            m.role,
            m.text,
            not summarized and m.id.startswith(_CLEARED_PREFIX),
            smaller.get(m.sha256, ""),
        )
        for m in messages
    ]


def _smaller(state: SessionState | None) -> dict[str, str]:
    """The text standing in the history for each original the newest compaction made
    smaller, by the original's content hash."""
    projection = Projection.of(state.projection) if state is not None else None
    if projection is None:
        return {}
    out = {}
    for _, original, item in projection.smaller:
        (message,) = decode([json.loads(item)], projection.format).messages  # type: ignore[arg-type]
        out[original] = message_text(message)
    return out


def _replaced(
    records: Sequence[SummaryRecord],
    messages: Sequence[StoredMessage],
    opened: str | None,
    page: int,
    smaller: Mapping[str, str],
) -> list[Replaced]:
    """Each compaction, newest first, with a page of its originals (``page`` of the one
    ``opened``, the first page of the others)."""
    by_compaction: dict[str, list[StoredMessage]] = {}
    for message in messages:
        by_compaction.setdefault(message.compaction_id, []).append(message)
    out: list[tuple[datetime, str, SummaryRecord | None]] = [
        (r.created_at, r.id, r) for r in records
    ]
    known = {r.id for r in records}
    out += [(ms[0].created_at, cid, None) for cid, ms in by_compaction.items() if cid not in known]
    out.sort(key=lambda t: (t[0], t[1]), reverse=True)
    result = []
    for at, cid, record in out:
        mine = by_compaction.get(cid, [])
        pages = max(1, math.ceil(len(mine) / ORIGINALS_PER_PAGE))
        shown = min(max(page, 1), pages) if cid == opened else 1
        start = (shown - 1) * ORIGINALS_PER_PAGE
        result.append(
            Replaced(
                id=cid,
                at=at,
                summary=record,
                summary_text=render_compact(record) if record is not None else "",
                originals=_originals(
                    mine[start : start + ORIGINALS_PER_PAGE],
                    summarized=record is not None,
                    smaller=smaller,
                ),
                total=len(mine),
                page=shown,
                pages=pages,
                positions=(mine[0].position, mine[-1].position) if mine else None,
            )
        )
    return result


def _events(records: Sequence[RequestRecord]) -> list[tuple[datetime, str]]:
    out: list[tuple[datetime, str]] = []
    for r in records:
        out.extend((r.at, e) for e in r.events)
        if r.error:
            out.append((r.at, f"error: {r.error} (status {r.status})"))
    return sorted(out, reverse=True)


def session_view(
    store: StoreBase,
    session_id: str,
    *,
    limits: Limits,
    opened: str | None = None,
    page: int = 1,
) -> SessionView | None:
    """One session, or ``None`` when the store knows nothing of it."""
    state = store.session(session_id)
    records = store.requests(session_id, limit=CHART_REQUESTS)[::-1]
    if state is None and not records:
        return None
    messages = store.recall(session_id)
    summaries = store.summaries(session_id)
    model = records[-1].model if records else ""
    window, trigger = limits(model) if model else (None, None)
    points = [
        RequestPoint(
            at=r.at,
            before=r.tokens_before or 0,
            after=r.tokens_after or r.tokens_before or 0,
            compacted=r.compacted,
            label=r.at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
        for r in records
        if r.tokens_before is not None
    ]
    return SessionView(
        id=session_id,
        state=state,
        model=model,
        format=records[-1].format if records else (messages[0].format if messages else ""),
        window=window,
        trigger=trigger,
        points=points,
        figures=Figures.of(store.request_rollup("session", session_id=session_id)),
        compactions=_replaced(summaries, messages, opened, page, _smaller(state)),
        events=_events(records),
        stored=len(messages),
        recorded=bool(records),
    )


@dataclass(frozen=True, slots=True)
class Hit:
    position: int
    id: str
    role: str
    score: float
    parts: list[tuple[str, bool]]
    """The snippet in pieces, each with whether it matched (shown marked)."""


def search(store: StoreBase, session_id: str, query: str, *, limit: int = 50) -> list[Hit]:
    """The store's full-text search over the session's originals."""
    hits = store.search(session_id, query, limit=limit)
    out = []
    for hit in hits:
        pieces = _MARK.split(hit.snippet)
        # split() with one group alternates: text, match, text, match, ...
        parts = [(p, i % 2 == 1) for i, p in enumerate(pieces) if p]
        m = hit.message
        out.append(Hit(m.position, m.id, m.role, hit.score, parts))
    return out
