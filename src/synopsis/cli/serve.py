"""``synopsis serve``: run the proxy (:mod:`synopsis.proxy`) under uvicorn, in this process
or (``--workers N``) in N processes that share the store."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from synopsis.cli.common import UsageError, add_strategy_option, positive_int
from synopsis.cli.lifecycle import positive_days
from synopsis.stores import MemoryStore, SQLiteStore
from synopsis.stores.requests import RECORDS_MAX, RECORDS_RETENTION_DAYS

if TYPE_CHECKING:
    from synopsis.cli.common import Parser
    from synopsis.proxy.state import ProxyState

__all__ = ["register", "worker_app"]

_SUMMARIZERS = ("rules", "openai", "openai-responses", "anthropic")
_CONTEXT_MANAGEMENT = ("auto", "emulate", "pass")
"""The proxy's ``MODES`` (not imported here: the proxy extra is optional)."""
_LOCAL = ("127.0.0.1", "localhost", "::1")
_MAX_PORT = 65535
_WORKER_ARGS = "_SYNOPSIS_SERVE_ARGS"
"""How ``--workers`` hands the command's options to each worker process (as JSON): uvicorn
starts a worker from an import string, :func:`worker_app`. Not ``SYNOPSIS_*``, which the
settings read as compaction options."""


def _model_window(text: str) -> tuple[str, int]:
    model, sep, tokens = text.rpartition("=")
    if not sep or not model:
        raise argparse.ArgumentTypeError(f"expected MODEL=TOKENS, got {text!r}")
    return model, positive_int(tokens)


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= _MAX_PORT:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to {_MAX_PORT}, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def token_text(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("an empty token would let anyone in: give a token")
    return text


def _options(args: argparse.Namespace) -> dict[str, Any]:
    given = {
        "context_window": args.window,
        "keep": args.keep,
        "trigger": args.trigger,
        "strategy": args.strategy,
        "summarizer": args.summarizer,
        "summarizer_models": [args.summarizer_model] if args.summarizer_model else None,
        "base_url": args.base_url,
        "store": args.store,
        "on_unreachable": "return" if args.forward_unreachable else None,
    }
    return {k: v for k, v in given.items() if v is not None}


def app_for(args: argparse.Namespace) -> Any:  # noqa: ANN401 - a Starlette app
    """The proxy app the arguments describe (the extra's absence is a usage error)."""
    try:
        from synopsis.proxy import create_app  # noqa: PLC0415 - the proxy extra is optional
    except ImportError as error:
        raise UsageError(str(error)) from None
    try:
        return _created(create_app, args)
    except ImportError as error:  # the page's Jinja2
        raise UsageError(str(error)) from None


def _created(create_app: Any, args: argparse.Namespace) -> Any:  # noqa: ANN401
    return create_app(
        upstream_openai=args.upstream_openai,
        upstream_anthropic=args.upstream_anthropic,
        auth_token=args.auth_token,
        fail_open=not args.fail_closed,
        timeout=args.timeout,
        log_json=args.log_json,
        log_bodies=args.log_bodies,
        windows=dict(args.model_window or ()),
        remembered_sessions=args.remembered_sessions,
        body_timeout=args.body_timeout,
        max_concurrent=args.max_concurrent,
        max_compactors=args.max_compactors,
        max_body_size=args.max_body_size,
        record_requests=not args.no_records,
        context_management=args.context_management,
        records_retention=args.records_retention,
        records_max=args.records_max,
        ui=not args.no_ui,
        config=args.config,
        **_options(args),
    )


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a protocol class
    """``WorkerProtocol``: uvicorn's HTTP protocol with the header timeout the command was
    given, for a ``--workers`` process (which imports it by name)."""
    if name != "WorkerProtocol":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from synopsis.proxy.connections import header_timed  # noqa: PLC0415 - the proxy extra

    return header_timed(float(json.loads(os.environ[_WORKER_ARGS])["header_timeout"]))


def worker_app() -> Any:  # noqa: ANN401 - a Starlette app
    """The app of one ``--workers`` process, from the options the command handed over."""
    args = argparse.Namespace(**json.loads(os.environ[_WORKER_ARGS]))
    _logging(args.log_json)
    return app_for(args)


def _cmd_serve(args: argparse.Namespace) -> int:
    app = app_for(args)
    import uvicorn  # noqa: PLC0415 - installed with the proxy extra, checked by app_for

    if args.host not in _LOCAL:
        print(
            f"synopsis: warning: listening on {args.host}: anyone who can reach it can send "
            "requests through it, and spend an LLM summarizer's key"
            + ("" if args.auth_token else "; consider --auth-token"),
            file=sys.stderr,
        )
    from synopsis.proxy.connections import header_timed, log_config  # noqa: PLC0415

    common: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": "warning",
        "server_header": False,
        "date_header": False,
        "log_config": log_config(args.log_json),
    }
    if args.workers == 1:
        listening = listening_socket(args.host, args.port)
        print(_started(args, app.state.proxy, listening), file=sys.stderr, flush=True)
        _logging(args.log_json)
        config = uvicorn.Config(app, http=header_timed(args.header_timeout), **common)
        # The server re-raises the Ctrl-C it stopped on: a stop asked for is a clean exit.
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[listening])
        return 0
    # Each worker builds its own app (its own compactors and upstream clients) on the store
    # they share: the one built here checked the options and made the store ready (a
    # SQLite file's schema), once.
    compactors = app.state.proxy.compactors
    shared = not isinstance(compactors.store, MemoryStore)
    if not shared:
        compactors.close()
        raise UsageError(
            "--workers needs a shared store (a SQLite file or postgresql:// URL), not memory"
        )
    try:
        listening = listening_socket(args.host, args.port)
        print(_started(args, app.state.proxy, listening), file=sys.stderr, flush=True)
    finally:
        compactors.close()
    os.environ[_WORKER_ARGS] = json.dumps({k: v for k, v in vars(args).items() if k != "run"})
    # A worker is started from import strings: the protocol, made for the header timeout,
    # is one too (see __getattr__).
    config = uvicorn.Config(
        f"{__name__}:worker_app",
        factory=True,
        workers=args.workers,
        http=f"{__name__}:WorkerProtocol",
        **common,
    )
    from uvicorn.supervisors import Multiprocess  # noqa: PLC0415 - with uvicorn, above

    Multiprocess(config, sockets=[listening]).run()
    return 0


def _started(args: argparse.Namespace, state: ProxyState, listening: socket.socket) -> str:
    """The one line the command says when it starts: where it listens (the port it got, when
    asked for any), its upstreams, its store, whether it asks for a token, its windows; as
    JSON with ``--log-json``, like every other line it writes."""
    host, port = listening.getsockname()[:2]
    store = state.compactors.store
    if isinstance(store, SQLiteStore):
        kept = f"the SQLite file {store.path}"
    elif isinstance(store, MemoryStore):
        kept = "memory (gone when it stops)"
    else:
        kept = f"PostgreSQL {getattr(store, 'url', type(store).__name__)}"
    if args.window is not None:
        windows = f"--window {args.window:,} for every model"
    else:
        windows = "the model table (an unknown model: 200,000, said when first named)"
    if args.model_window:
        windows += "; " + ", ".join(f"{m} {t:,}" for m, t in args.model_window)
    said = {
        "listening": f"http://{f'[{host}]' if ':' in host else host}:{port}",
        "workers": args.workers,
        "upstreams": dict(state.upstreams),
        "store": kept,
        "auth": "on (x-synopsis-token)" if args.auth_token else "off",
        "windows": windows,
    }
    if not args.no_ui and _has_page(state):
        said["page"] = f"{said['listening']}/ui/"
    if args.log_json:
        return json.dumps({"event": "proxy_started", **said})
    workers = f" ({args.workers} workers)" if args.workers > 1 else ""
    upstreams = ", ".join(f"{api} {url}" for api, url in state.upstreams.items())
    return (
        f"synopsis serve: listening on {said['listening']}{workers} · upstreams: {upstreams}"
        f" · store: {kept} · auth: {said['auth']} · windows: {windows}"
        + (f" · page: {said['page']}" if "page" in said else "")
    )


def _has_page(state: ProxyState) -> bool:
    """Whether the app serves the operator's page (a store of synopsis's own has one)."""
    from synopsis.stores._base import StoreBase  # noqa: PLC0415

    return isinstance(state.compactors.store, StoreBase)


def listening_socket(host: str, port: int) -> socket.socket:
    """The socket the workers share. Made here, not by uvicorn, to name its protocol: asyncio
    sets TCP_NODELAY on a connection only when its socket says TCP, and without it each
    answer on a kept-alive connection waits about 40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    return sock


def _logging(as_json: bool) -> None:
    """The proxy's request lines on stderr, one per request (they are JSON already with
    ``--log-json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s" if as_json else "%(asctime)s %(message)s"))
    logger = logging.getLogger("synopsis.proxy")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add ``serve`` to the subcommands."""
    from synopsis.proxy.defaults import (  # noqa: PLC0415 - no third-party imports
        MAX_BODY_SIZE,
        UPSTREAMS,
    )

    cmd = sub.add_parser(
        "serve",
        help="run an OpenAI- and Anthropic-compatible proxy that compacts what agents send",
        description=(
            "Run a proxy in front of OpenAI- and Anthropic-compatible APIs: each request's "
            "history is compacted for the model it names, through its session, and forwarded. "
            "Compaction options also come from a TOML file (--config) and SYNOPSIS_* variables."
        ),
    )
    cmd.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    cmd.add_argument(
        "--port", type=port_number, default=8787, help="port (8787; 0: any free one, said at start)"
    )
    cmd.add_argument(
        "--upstream-openai",
        default=UPSTREAMS["openai"],
        metavar="URL",
        help="where chat completions, Responses and other paths go (%(default)s)",
    )
    cmd.add_argument(
        "--upstream-anthropic",
        default=UPSTREAMS["anthropic"],
        metavar="URL",
        help="where Anthropic Messages go (%(default)s)",
    )
    cmd.add_argument(
        "--auth-token",
        type=token_text,
        metavar="TOKEN",
        help="require this token in x-synopsis-token (not empty)",
    )
    cmd.add_argument(
        "--fail-closed",
        action="store_true",
        help="answer 500 when a compaction fails (default: forward the request unchanged)",
    )
    cmd.add_argument(
        "--context-management",
        choices=_CONTEXT_MANAGEMENT,
        default="auto",
        help="who does the providers' own context management (Anthropic's context_management "
        "edits, OpenAI's Responses compaction and /v1/responses/compact): the proxy "
        "(emulate), the upstream (pass), or the proxy unless the upstream is the provider's "
        "own API (auto, the default)",
    )
    cmd.add_argument(
        "--forward-unreachable",
        action="store_true",
        help="forward a request no compaction can fit unchanged (default: answer 400 saying "
        "what cannot fit)",
    )
    cmd.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="how long the upstream may take to start answering, or between chunks (600)",
    )
    # No --model: each request names its own, and is compacted for it.
    cmd.add_argument(
        "--window", type=positive_int, help="the context window of every model, in tokens"
    )
    cmd.add_argument(
        "--keep", help="what stays verbatim, e.g. 8, messages:8, tokens:4000, fraction:0.2"
    )
    cmd.add_argument("--trigger", help="when to compact, e.g. 0.8, tokens:100000, messages:50")
    add_strategy_option(cmd)
    cmd.add_argument(
        "--model-window",
        type=_model_window,
        action="append",
        metavar="MODEL=TOKENS",
        help="the window of one model (repeat for more), over --window and the model table",
    )
    cmd.add_argument("--summarizer", choices=_SUMMARIZERS, help="who writes the summaries")
    cmd.add_argument("--summarizer-model", help="the model an LLM summarizer asks")
    cmd.add_argument("--base-url", help="the summarizer API's base URL")
    cmd.add_argument(
        "--store",
        help="'memory' (the default), a SQLite file, or a postgresql:// URL that replicas "
        "share, keeping sessions and originals",
    )
    cmd.add_argument("--config", help="a TOML file of compaction options")
    cmd.add_argument(
        "--remembered-sessions",
        type=positive_int,
        default=256,
        metavar="N",
        help="sessions whose last request is kept for the fast path (256)",
    )
    cmd.add_argument(
        "--header-timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a connection may take to send a request's headers, from its opening or "
        "the last response's end (30)",
    )
    cmd.add_argument(
        "--body-timeout",
        type=_positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long a request body may pause between two chunks, then 408 (60)",
    )
    cmd.add_argument(
        "--max-concurrent",
        type=positive_int,
        default=1024,
        metavar="N",
        help="requests handled at once; beyond, 503 (/healthz and /metrics excepted) (1024)",
    )
    cmd.add_argument(
        "--max-compactors",
        type=positive_int,
        default=64,
        metavar="N",
        help="models whose compactor is kept; the least recently used is dropped (64)",
    )
    cmd.add_argument(
        "--max-body-size",
        type=positive_int,
        default=MAX_BODY_SIZE,
        metavar="BYTES",
        help="the largest request body read; a larger one gets a 413 (%(default)s, 32 MiB)",
    )
    cmd.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="serve from N processes, which need a shared store: a SQLite file or a "
        "postgresql:// URL (1)",
    )
    cmd.add_argument(
        "--no-records",
        action="store_true",
        help="write no per-request records to the store (default: each request's figures, "
        "written off the request's path)",
    )
    cmd.add_argument(
        "--records-retention",
        type=positive_days,
        default=RECORDS_RETENTION_DAYS,
        metavar="DAYS",
        help="keep the request records of the last DAYS days (%(default)g)",
    )
    cmd.add_argument(
        "--records-max",
        type=positive_int,
        default=RECORDS_MAX,
        metavar="N",
        help="keep the newest N request records at most (%(default)s)",
    )
    cmd.add_argument(
        "--no-ui",
        action="store_true",
        help="serve no operator's page (default: at /ui/, behind --auth-token; see docs/ui.md)",
    )
    cmd.add_argument("--log-json", action="store_true", help="one JSON object per request")
    cmd.add_argument(
        "--log-bodies", action="store_true", help="log forwarded bodies too (never headers)"
    )
    cmd.set_defaults(run=_cmd_serve)
