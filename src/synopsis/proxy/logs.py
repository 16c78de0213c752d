"""One log line per request, as text or JSON; never a header, and a body only when asked."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LOGGER", "Line"]

LOGGER = logging.getLogger("synopsis.proxy")


@dataclass(slots=True)
class Line:
    """What one request did."""

    method: str
    path: str
    status: int = 0
    model: str | None = None
    session: str | None = None
    stream: bool = False
    messages_in: int | None = None
    messages_out: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    compacted: bool = False
    code: str | None = None
    retried: bool = False
    """Sent once more, compacted harder, after the upstream refused it as too long."""
    window: int | None = None
    """The model's window, when this request changed it: its overflow taught a smaller one,
    or its usage showed a learnt one wrong."""
    failed_open: str | None = None
    error: str | None = None
    ms_compaction: float = 0.0
    ms_upstream: float = 0.0
    ms_total: float = 0.0
    usage: int | None = None
    body: str | None = field(default=None)

    def fields(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None and v is not False}
        for key in ("ms_compaction", "ms_upstream", "ms_total"):
            out[key] = round(self.__getattribute__(key), 3)
        return out

    def emit(self, as_json: bool) -> None:
        if not LOGGER.isEnabledFor(logging.INFO):
            return
        fields = self.fields()
        if as_json:
            text = json.dumps({"event": "proxy_request", **fields}, ensure_ascii=False)
        else:
            text = " ".join(f"{k}={v}" for k, v in fields.items() if k != "body")
            if "body" in fields:
                text += f"\nbody: {fields['body']}"
        level = logging.WARNING if self.status >= 500 or self.failed_open else logging.INFO
        LOGGER.log(level, text)
