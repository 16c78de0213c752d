"""``synopsis ui``: the operator's page (:mod:`synopsis.ui`) for a store alone, read-only.

For a store a library writes (a SQLite file, a PostgreSQL URL): its sessions, summaries and
originals, and the request records of any proxy that wrote to it too. It never changes the
store; ``synopsis serve`` serves the same page, with forgetting, at ``/ui/``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from synopsis.cli.common import UsageError, positive_int
from synopsis.cli.serve import listening_socket, port_number, token_text

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from synopsis.cli.common import Parser
    from synopsis.stores._base import StoreBase

__all__ = ["register"]

DEFAULT_PORT = 8484
_LOCAL = ("127.0.0.1", "localhost", "::1")


def _store(value: str) -> StoreBase:
    """The store to show: a SQLite file that exists, or a PostgreSQL URL."""
    from pathlib import Path  # noqa: PLC0415

    from synopsis.stores._base import StoreBase  # noqa: PLC0415
    from synopsis.stores._open import is_postgres_url, open_store  # noqa: PLC0415

    if not is_postgres_url(value) and not Path(value).is_file():
        raise UsageError(f"no store at {value}: give a SQLite file or a postgresql:// URL")
    store = open_store(value)
    assert isinstance(store, StoreBase)  # a file or a URL opens one of synopsis's own
    return store


def app_for(args: argparse.Namespace) -> Any:  # noqa: ANN401 - a Starlette app
    """The page the arguments describe, mounted at /ui as ``synopsis serve`` mounts it."""
    try:
        from starlette.applications import Starlette  # noqa: PLC0415 - the ui extra
        from starlette.responses import RedirectResponse  # noqa: PLC0415
        from starlette.routing import Mount, Route  # noqa: PLC0415

        from synopsis.ui.app import create_ui  # noqa: PLC0415
    except ImportError as error:
        raise UsageError(
            f"synopsis ui needs the ui extra: pip install 'synopsis[ui]' ({error})"
        ) from None
    from synopsis.planning.triggers import Trigger  # noqa: PLC0415
    from synopsis.ui.data import limits_for  # noqa: PLC0415

    store = _store(args.store)
    limits = limits_for(Trigger.fraction(args.trigger), window=args.window)
    page = create_ui(store, auth_token=args.auth_token, read_only=True, limits=limits)

    async def to_page(request: object) -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    app = Starlette(
        routes=[Route("/", to_page), Route("/ui", to_page), Mount("/ui", app=page)],
        lifespan=lifespan,
    )
    app.state.store = store
    return app


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction above 0 and at most 1, got {text}")
    return value


def _cmd_ui(args: argparse.Namespace) -> int:
    app = app_for(args)
    import uvicorn  # noqa: PLC0415 - with starlette, checked by app_for

    if args.host not in _LOCAL:
        print(
            f"synopsis: warning: listening on {args.host}: anyone who can reach it can read "
            "every stored conversation" + ("" if args.auth_token else "; consider --auth-token"),
            file=sys.stderr,
        )
    sock = listening_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"synopsis ui: http://{shown}:{port}/ui/ · store: {args.store} · read-only · "
        f"sign-in: {'on' if args.auth_token else 'off'}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        app, log_level="warning", server_header=False, date_header=False, lifespan="on"
    )
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``ui`` to the subcommands."""
    cmd = sub.add_parser(
        "ui",
        help="serve the operator's page, read-only, for a store a library wrote",
        description=(
            "Serve the operator's page (sessions, compactions, summaries beside the originals "
            "they replaced, search, export) for a SQLite file or a PostgreSQL URL, read-only. "
            "synopsis serve serves the same page at /ui/."
        ),
    )
    cmd.add_argument("--store", required=True, help="a SQLite file or a postgresql:// URL")
    cmd.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    cmd.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port ({DEFAULT_PORT}; 0: any free one, said at start)",
    )
    cmd.add_argument(
        "--auth-token", type=token_text, metavar="TOKEN", help="ask a browser for this token"
    )
    cmd.add_argument(
        "--window", type=positive_int, help="the window marked on every session's chart"
    )
    cmd.add_argument(
        "--trigger",
        type=_fraction,
        default=0.8,
        metavar="FRACTION",
        help="the trigger marked on the charts, as a share of the window (0.8)",
    )
    cmd.set_defaults(run=_cmd_ui)
