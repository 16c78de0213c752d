"""What the subcommands share: usage errors, reading a file, common options, warnings on stderr."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import warnings
from typing import TYPE_CHECKING, NoReturn

from synopsis.errors import UnknownModelWarning
from synopsis.events import CompactionFailed
from synopsis.formats import FORMATS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "FORMAT_CHOICES",
    "HISTORY_FILE",
    "PROVIDER_CHOICES",
    "Parser",
    "UsageError",
    "add_compaction_options",
    "add_model_options",
    "known_window",
    "load_file",
    "positive_int",
    "warnings_to_stderr",
]

HISTORY_FILE = "a JSON or JSONL history in any supported format"
FORMAT_CHOICES = [f for f in FORMATS if f != "synopsis"]
"""What ``--format`` accepts: synopsis's own format is for code, never a file to detect."""
PROVIDER_CHOICES = ["openai", "openai-strict", "responses", "anthropic", "gemini"]


class UsageError(Exception):
    """A mistake in how the command was called or what it was given: one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` s, printed as every other."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def load_file(path: Path) -> object:
    """A history from a JSON file (a list, or a request body) or a JSONL file (one message or
    item per line)."""
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a history file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        raise UsageError(f"{path} is empty")
    try:
        return _parse_json(text, str(path))
    except json.JSONDecodeError as whole:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise UsageError(f"{path} is not JSON or JSONL: {_where(whole)}") from None
        items = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(_parse_json(line, f"{path}:{number}"))
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{number} is not JSON: {_where(exc)}") from None
        return items


def _where(error: json.JSONDecodeError) -> str:
    """What json found wrong and where, in words: "Unterminated string starting at line 1
    column 27", "Expecting value: line 3 column 1"."""
    joint = " " if error.msg.endswith(" at") else ": "
    return f"{error.msg}{joint}line {error.lineno} column {error.colno}"


def _parse_json(text: str, where: str) -> object:
    """json.loads, with the two ways valid-looking JSON still fails turned into usage errors:
    nesting deeper than the interpreter's stack, and integers past Python's digit limit."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UsageError(f"{where} is nested too deeply to be a history") from None
    except ValueError as exc:
        raise UsageError(f"{where} holds a value synopsis cannot read ({exc})") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--model`` and ``--window``: whose tokenizer counts, and how large the window is."""
    parser.add_argument("--model", help="model id, for its tokenizer and context window")
    parser.add_argument("--window", type=positive_int, help="context window in tokens")


def add_compaction_options(parser: argparse.ArgumentParser) -> None:
    """The model options and ``--keep``/``--trigger``, for the subcommands that compact."""
    add_model_options(parser)
    parser.add_argument(
        "--keep", help="what stays verbatim, e.g. 8, messages:8, tokens:4000, fraction:0.2"
    )
    parser.add_argument("--trigger", help="when to compact, e.g. 0.8, tokens:100000, messages:50")
    add_strategy_option(parser)


def add_strategy_option(parser: argparse.ArgumentParser) -> None:
    """``--strategy``: clear old tool outputs, summarize, or both in order."""
    parser.add_argument(
        "--strategy",
        help="how a pressure is answered: clear (old tool outputs), summarize, or "
        "clear,summarize (summarize only when clearing cannot reach the target)",
    )


def known_window(model: str | None, window: int | None) -> None:
    """Refuse a model the table does not know unless ``--window`` says how large it is: a
    compaction sized for a guessed window could overflow the real one."""
    from synopsis.models import lookup  # noqa: PLC0415 - keeps the parser module light

    if model is not None and window is None and lookup(model) is None:
        raise UsageError(f"unknown model {model!r}: give its context window with --window N")


class _Warnings(logging.Handler):
    """synopsis's log warnings as ``synopsis: warning: ...`` lines; a failed compaction is
    left out, since the error line or the report that follows says the same."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if not isinstance(getattr(record, "synopsis_event", None), CompactionFailed):
            print(f"synopsis: warning: {record.getMessage()}", file=sys.stderr)


@contextlib.contextmanager
def warnings_to_stderr() -> Iterator[None]:
    logger = logging.getLogger("synopsis")
    handler = _Warnings()
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            # Said once already, as the log line the handler prints.
            warnings.simplefilter("ignore", UnknownModelWarning)
            yield
    finally:
        logger.removeHandler(handler)
