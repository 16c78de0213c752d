"""What the proxy holds while it runs (``app.state.proxy``): its compactors, metrics,
upstream clients and options. Every other proxy module reads it; it imports none of them
but the compactors and metrics (and the defaults)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from synopsis.proxy.defaults import MAX_BODY_SIZE

if TYPE_CHECKING:
    import httpx2

    from synopsis.proxy.compactors import Compactors
    from synopsis.proxy.metrics import Metrics
    from synopsis.proxy.recorder import Recorder

__all__ = ["ProxyState"]


@dataclass
class ProxyState:
    """What the app holds while it runs (``app.state.proxy``)."""

    compactors: Compactors
    metrics: Metrics
    upstreams: dict[str, str]
    timeout: float
    connect_timeout: float
    auth_token: str | None
    fail_open: bool
    log_json: bool
    log_bodies: bool
    transport: httpx2.AsyncBaseTransport | None
    clients: dict[str, httpx2.AsyncClient] = field(default_factory=dict)
    stable: dict[str, tuple[object, object]] = field(default_factory=dict)
    """Per session, the system prompt and tools last seen: an equal copy is replaced by them,
    so that the fast path, which knows them by identity, recognises them. The sessions used
    last, in order of use."""
    remembered_sessions: int = 256
    """How many sessions ``stable`` keeps, as the compactors' fast path remembers."""
    max_body_size: int = MAX_BODY_SIZE
    """The largest request body read, in bytes (``--max-body-size``); larger gets a 413."""
    native_anthropic: bool = False
    """Whether the proxy applies Anthropic's ``context_management`` edits itself
    (:mod:`.native_anthropic`)."""
    native_openai: bool = False
    """Whether the proxy does OpenAI's Responses compaction itself (:mod:`.native_openai`)."""
    strict_openai: bool = False
    """Whether OpenAI's own compaction items are refused on ``/v1/responses`` (``emulate``:
    the upstream is not OpenAI's), not sent on (``auto``: it may be a gateway to it)."""
    recorder: Recorder | None = None
    """Where each request's figures are queued for the store (None: not recorded)."""

    def client(self, api: str) -> httpx2.AsyncClient:
        return self.clients[api]
