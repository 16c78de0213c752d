"""The text side of :class:`synopsis.config.Settings`: trigger and keep strings, TOML output,
and pydantic's validation errors turned into one plain sentence per problem.

Trigger strings: ``"0.8"`` or ``"fraction:0.8"`` (a share of the window), ``"tokens:200000"``,
``"messages:200"``, combined with ``|`` (either fires) and ``&`` (both must), ``&`` binding
tighter, as in Python: ``"tokens:150000&messages:50|fraction:0.9"``. Keep strings:
``"messages:6"`` (or a bare ``6``), ``"tokens:8000"``, ``"fraction:0.3"``.
"""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING

from synopsis.planning.split import Keep
from synopsis.planning.triggers import Trigger

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

__all__ = [
    "Problems",
    "explain",
    "normalize_keep",
    "normalize_trigger",
    "parse_keep",
    "parse_trigger",
    "toml_table",
    "trigger_fraction",
]

_TRIGGER_FORMS = (
    "a fraction in (0, 1], 'fraction:F', 'tokens:N' or 'messages:N' "
    "(N a whole number above 0), combined with | (or) and & (and)"
)
_KEEP_FORMS = (
    "'auto', a whole number of messages >= 0, 'messages:N', 'tokens:N' (N >= 0) or "
    "'fraction:F' (0 <= F < 1)"
)


class Problems(ValueError):
    """Problems found across options: ``(options involved, sentence)`` pairs."""

    def __init__(self, problems: Sequence[tuple[tuple[str, ...], str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(sentence for _, sentence in self.problems))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _whole(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _fraction_term(text: str, shown: str) -> Trigger:
    share = _number(text)
    if share is None or math.isnan(share) or not 0 < share <= 1:
        raise ValueError(f"trigger must be a fraction in (0, 1], got {shown}")
    return Trigger.fraction(share)


def _term(term: str, whole: str) -> Trigger:
    text = term.strip()
    if not text:
        raise ValueError(f"trigger has an empty part in {whole!r}; write {_TRIGGER_FORMS}")
    kind, colon, rest = text.partition(":")
    if not colon:
        if _number(text) is None:
            raise ValueError(f"trigger must be {_TRIGGER_FORMS}, got {text!r}")
        return _fraction_term(text, text)
    kind = kind.strip().lower()
    rest = rest.strip()
    if kind == "fraction":
        return _fraction_term(rest, repr(text))
    if kind in ("tokens", "messages"):
        count = _whole(rest)
        if count is None or count <= 0:
            raise ValueError(f"trigger {kind} must be a whole number above 0, got {text!r}")
        return Trigger.tokens(count) if kind == "tokens" else Trigger.messages(count)
    raise ValueError(f"trigger must be {_TRIGGER_FORMS}, got {text!r}")


def parse_trigger(value: object) -> Trigger:
    """The :class:`~synopsis.planning.Trigger` a trigger option stands for; ``ValueError``
    with a sentence naming ``trigger`` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"trigger must be {_TRIGGER_FORMS}, got {value!r}")
    if not isinstance(value, str):
        return _fraction_term(str(value), repr(value))
    alternatives: list[Trigger] = []
    for branch in value.split("|"):
        parts = [_term(term, value) for term in branch.split("&")]
        both = parts[0]
        for part in parts[1:]:
            both = both & part
        alternatives.append(both)
    either = alternatives[0]
    for alternative in alternatives[1:]:
        either = either | alternative
    return either


def normalize_trigger(value: object) -> float | str:
    """The stored form of a trigger option, checked by parsing it: a number (or numeric
    text) as a float, other text stripped."""
    if isinstance(value, str):
        text = value.strip()
        if _number(text) is None:
            parse_trigger(text)
            return text
        return _fraction_term(text, text).value
    return parse_trigger(value).value  # a number here, or it raises


def parse_keep(value: object) -> Keep:
    """The :class:`~synopsis.planning.Keep` a keep option stands for; ``ValueError`` with a
    sentence naming ``keep`` when it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"keep must be {_KEEP_FORMS}, got {value}")
        return Keep.messages(value)
    if not isinstance(value, str):
        raise ValueError(f"keep must be {_KEEP_FORMS}, got {value!r}")
    text = value.strip()
    if text.lower() == "auto":
        return Keep.auto()
    kind, colon, rest = text.partition(":")
    kind, rest = (kind.strip().lower(), rest.strip()) if colon else ("messages", text)
    if kind in ("messages", "tokens"):
        count = _whole(rest)
        if count is not None and count >= 0:
            return Keep.messages(count) if kind == "messages" else Keep.tokens(count)
    elif kind == "fraction":
        share = _number(rest)
        if share is not None and 0 <= share < 1:
            return Keep.fraction(share)
    raise ValueError(f"keep must be {_KEEP_FORMS}, got {text!r}")


def normalize_keep(value: object) -> int | str:
    """The stored form of a keep option, checked by parsing it: a whole number (or its
    text) as an int, other text stripped."""
    if isinstance(value, str):
        text = value.strip()
        count = _whole(text)
        if count is None:
            parse_keep(text)
            return text
        value = count
    return int(parse_keep(value).value)  # a whole number here, or it raises


def trigger_fraction(trigger: Trigger) -> float | None:
    """The share of the window at which the fraction side of ``trigger`` fires (the lowest
    share for ``|``, the highest for ``&``), or ``None`` when it has no fraction."""
    if trigger.kind == "fraction":
        return trigger.value
    found = [f for f in (trigger_fraction(c) for c in trigger.children) if f is not None]
    if not found:
        return None
    return min(found) if trigger.kind == "any" else max(found)


# -- TOML output -------------------------------------------------------------------------------


def _toml_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\t" or (ord(char) >= 0x20 and ord(char) != 0x7F):
            out.append(char)
        else:
            out.append(f"\\u{ord(char):04X}")
    out.append('"')
    return "".join(out)


def toml_value(value: object) -> str:
    """``value`` (text, a whole number, a finite float, a boolean or a list of those) as a
    TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no place in the settings")
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ValueError(f"{value!r} cannot be written as TOML")


def toml_table(name: str, values: Mapping[str, object]) -> str:
    """A TOML document with one table ``[name]`` holding ``values``."""
    lines = [f"[{name}]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


# -- errors ------------------------------------------------------------------------------------

_PHRASES = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "tuple_type": "must be a list of names (or one comma-separated text)",
}
_BOUNDS = {
    "greater_than": ("gt", "must be above"),
    "greater_than_equal": ("ge", "must be at least"),
    "less_than": ("lt", "must be below"),
    "less_than_equal": ("le", "must be at most"),
}


def _phrase(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx = error.get("ctx", {})
    if kind in _PHRASES:
        return _PHRASES[kind]
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"{words} {ctx[key]}"
    if kind == "literal_error":
        return f"must be {ctx['expected']}"
    message = error["msg"]
    if message.startswith("Input should be "):
        return "must be " + message.removeprefix("Input should be ")
    return message[:1].lower() + message[1:]


def _sentences(error: ErrorDetails, known: Collection[str]) -> list[tuple[tuple[str, ...], str]]:
    loc = error["loc"]
    name = str(loc[0]) if loc else "settings"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return [((name,), f"unknown option {name!r}{hint}")]
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, Problems):
        return list(cause.problems)
    if isinstance(cause, ValueError):
        return [((name,), str(cause))]
    where = name + "".join(f"[{part}]" for part in loc[1:])
    return [((name,), f"{where} {_phrase(error)}, got {error['input']!r}")]


def explain(error: ValidationError, origins: Mapping[str, str], known: Collection[str]) -> str:
    """One sentence per problem in ``error``, each prefixed by where its options came from
    (``origins``: option name to a label such as ``"SYNOPSIS_KEEP=-3"``)."""
    lines: list[str] = []
    for detail in error.errors(include_url=False):
        for options, sentence in _sentences(detail, known):
            sources = [origins[o] for o in options if o in origins]
            lines.append(f"{', '.join(sources)}: {sentence}" if sources else sentence)
    return "\n".join(lines)
