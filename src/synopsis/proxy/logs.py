"""One log line per request, as text or JSON; never a header, and a body only when asked.

Values come from clients (a model's name, a path): in a text line, one that holds a space, a
quote, an equals sign or any control character is written quoted, its specials escaped as
JSON escapes them, so that no value can end the line or forge a field of its own."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["LOGGER", "Line"]

LOGGER = logging.getLogger("synopsis.proxy")

_BARE = re.compile(r"[!#-<>-~]*")
"""What a text value may hold unquoted: printable ASCII but the space, ``"`` and ``=``."""
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters that end or garble a line in a terminal or a log reader: escaped in a body."""


def _text(value: object) -> str:
    text = str(value)
    return text if _BARE.fullmatch(text) else json.dumps(text)


def _escaped(body: str) -> str:
    return _BREAKS.sub(lambda found: json.dumps(found.group())[1:-1], body)


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
    tally: Any = field(default=None, repr=False)
    """The summarizer's calls for this request (:class:`~.tally.Tally`): recorded in the
    store, not logged."""

    def fields(self) -> dict[str, Any]:
        # Read field by field, not with asdict(): the tally holds the request's exchange,
        # which asdict would copy whole.
        named = ((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "tally")
        out = {k: v for k, v in named if v is not None and v is not False}
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
            text = " ".join(f"{k}={_text(v)}" for k, v in fields.items() if k != "body")
            if "body" in fields:
                text += f"\nbody: {_escaped(fields['body'])}"
        level = logging.WARNING if self.status >= 500 or self.failed_open else logging.INFO
        LOGGER.log(level, text)
