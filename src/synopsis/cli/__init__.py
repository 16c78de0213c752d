"""The ``synopsis`` command: its parser and :func:`main`, the console entry point."""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING

from synopsis import __version__
from synopsis.cli import inspect, lifecycle, replay_command, serve, store, ui
from synopsis.cli.common import Parser, UsageError
from synopsis.errors import ConfigurationError, ConversationError, StoreError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["main"]

_BROKEN_PIPE = 141
"""What a shell reports for a writer its reader left (128 + SIGPIPE), as ``head`` users expect."""

DESCRIPTION = (
    "Keep an LLM agent's conversation inside its model's context window: inspect, compact or "
    "replay a history file; recall, search or export what a session's store kept, and list, "
    "forget or prune its sessions; or serve a proxy that does it for any agent."
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="synopsis", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"synopsis {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    inspect.register(sub)
    store.register(sub)
    lifecycle.register(sub)
    replay_command.register(sub)
    serve.register(sub)
    ui.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command on ``argv`` (the process's arguments by default) and return its exit
    code. Every failure a user can cause (a missing file, a file that is not JSON, a history
    in no known format, a bad option, a store that cannot be reached) ends in one line on
    stderr and exit code 2, never a traceback."""
    # A history can hold lone surrogates (valid JSON escapes, not valid UTF-8); print them
    # escaped rather than die halfway through a report.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        code: int = args.run(args)
        sys.stdout.flush()  # a closed pipe is found here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader (head, a pager) has what it wanted: no traceback, and nothing more
        # written to the closed pipe when the interpreter flushes at exit.
        _quiet_stdout()
        return _BROKEN_PIPE
    except (UsageError, ConversationError, ConfigurationError, StoreError) as exc:
        # One line, whatever the error carries (a database driver's message spans several).
        print(f"synopsis: error: {' '.join(str(exc).split())}", file=sys.stderr)
    return 2


def _quiet_stdout() -> None:
    """Point stdout at the null device: what is still buffered is dropped, not written."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)
