"""Writing back JSON the proxy read: with orjson, or, where orjson cannot, the standard
library, so that every field goes on as the client sent it.

orjson reads what it cannot write: nesting deeper than 254 levels (it reads 1,024), and it
reads an integer beyond 64 bits as a float (``123456789012345678901234567890`` would go on as
``1.2345678901234568e+29``). A body that may hold such an integer is read again, exactly, by
the standard library (:func:`exact`); one nested deeper than orjson writes is written by the
standard library, up to Python's recursion limit (past it, ``RecursionError``: the caller
forwards the client's own bytes, or refuses).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "exact", "inexact"]

_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG = b"0" * 19
"""A run of 19 digits: the shortest integer past 64 bits (-9223372036854775809) has as many."""


def inexact(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer that orjson reads as a float (a run of 19 digits
    or more anywhere, in a string too: rare, and then the body is only read again)."""
    return _LONG in raw.translate(_DIGITS)


def exact(raw: bytes) -> Any:  # noqa: ANN401 - any JSON value
    """``raw`` (valid JSON, as orjson has read it) with every integer exact."""
    return json.loads(raw)


def dumps(value: object, *, sort_keys: bool = False) -> bytes:
    """``value`` as compact JSON: orjson's, or the standard library's where orjson cannot."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except orjson.JSONEncodeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
        return text.encode()
