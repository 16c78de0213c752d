"""What a server speaking a provider's protocol accepts, learned from what it refused.

Servers that speak the OpenAI or Anthropic protocol accept different parts of it. llama.cpp's
Python server refuses a JSON-schema response format (HTTP 500, "Input should be 'text' or
'json_object'") and an assistant message whose content is null (one validation error per
message of the request); chat templates of small models refuse two messages of one role in a
row. A :class:`Dialect` says how to ask: which structured output to request (a JSON schema;
JSON mode given the schema, which llama.cpp enforces with a grammar; JSON mode alone, in which
a small model writes JSON of its own shape; or none, the prompt asking for JSON and the answer
read as JSON or as sections),
and whether to send the messages strictly (text content never null, no two text messages of
one role in a row). A completion starts from the richest dialect (or a strict one when told),
steps down when a server refuses a request for one of those reasons, and remembers per server
and model what worked, so that later requests go there at once.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

from synopsis.overflows import read

__all__ = ["Dialect", "Dialects", "Refusal", "refusal", "strict_messages"]

Structure: TypeAlias = Literal["json_schema", "json_object_schema", "json_object", "plain"]
Refusal: TypeAlias = Literal["structure", "messages", "overflow", "invalid"]

_LOWER: Final[dict[Structure, Structure]] = {
    "json_schema": "json_object_schema",
    "json_object_schema": "json_object",
    "json_object": "plain",
}

_STRUCTURE = re.compile(r"response_format|json_schema|json_object|text\.format|'format'", re.I)
_MESSAGES = re.compile(
    r"'content'(?:, 'str')?\),\s*'msg':\s*'Input should be a valid string'|"
    r"\bcontent['\"]?\s*[:=]\s*(null|None)\b|(roles?|messages?) must alternate|"
    r"alternate (user|between)",
    re.I,
)
_VALIDATION = re.compile(
    r"validation error|input should be|literal_error|value_error|type_error|'loc'|\"loc\"|"
    r"invalid_request|unprocessable|is not valid under|roles must alternate",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Dialect:
    """How to ask one server: the structured output to request, and strict messages."""

    structure: Structure = "json_schema"
    strict: bool = False

    def after(self, refused: Refusal) -> Dialect | None:
        """The next dialect to try after a refusal of this one, or None when none is left."""
        if refused == "structure" and self.structure in _LOWER:
            return replace(self, structure=_LOWER[self.structure])
        if refused == "messages" and not self.strict:
            return replace(self, strict=True)
        return None


def refusal(status: int | None, text: str, sent: str = "") -> Refusal | None:
    """Why a server refused a request, when it refused it as invalid: a 4xx other than 408
    and 429, or a 5xx whose body is a validation error (which a retry would meet again).
    ``"overflow"`` when the request was over the model's context window (as
    :func:`synopsis.overflows.read` reads it, ``sent`` being the request, whose words a
    server may echo), ``"structure"`` when it names the response format, ``"messages"`` when
    it names null content or alternating roles, ``"invalid"`` for anything else; None when
    the failure may pass (a timeout, a lost connection, a rate limit, a server error)."""
    if status is None or status < 400 or status in (408, 429):
        return None
    if read(status, text, sent) is not None:
        return "overflow"
    if status >= 500 and not _VALIDATION.search(text):
        return None
    if _STRUCTURE.search(text):
        return "structure"
    if _MESSAGES.search(text):
        return "messages"
    return "invalid"


class Dialects:
    """What worked, per endpoint, server and model: shared by every completion of a process
    (a server's abilities do not depend on who asks), at most ``size`` entries."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._known: OrderedDict[tuple[str, str, str], Dialect] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str], default: Dialect) -> Dialect:
        with self._lock:
            return self._known.get(key, default)

    def learn(self, key: tuple[str, str, str], dialect: Dialect) -> None:
        with self._lock:
            self._known[key] = dialect
            self._known.move_to_end(key)
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    def forget(self) -> None:
        """Forget everything learned (a server that was upgraded, a test)."""
        with self._lock:
            self._known.clear()


def strict_messages(messages: list[Any]) -> list[Any]:
    """``messages`` as strict servers take them: a null ``content`` sent as ``""``, and two
    text-only messages of the same role in a row joined into one (a blank line between)."""
    out: list[Any] = []
    for message in messages:
        if not isinstance(message, dict) or "role" not in message:
            out.append(message)
            continue
        item = dict(message)
        if "content" in item and item["content"] is None:
            item["content"] = ""
        last = out[-1] if out else None
        if (
            isinstance(last, dict)
            and last.get("role") == item["role"]
            and _text_only(last)
            and _text_only(item)
        ):
            out[-1] = {**last, "content": f"{last['content']}\n\n{item['content']}"}
        else:
            out.append(item)
    return out


def _text_only(message: dict[str, Any]) -> bool:
    """A message that is its role and its text and nothing else (no calls, no id, no name)."""
    return set(message) == {"role", "content"} and isinstance(message["content"], str)
