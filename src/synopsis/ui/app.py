"""The operator's page as an ASGI app: :func:`create_ui`.

``synopsis serve`` mounts it at ``/ui`` beside the proxy's routes; ``synopsis ui`` serves it
alone, read-only, for a store a library wrote. Every page is rendered on the server from the
store (:mod:`synopsis.ui.data`) through Jinja2 with autoescaping on, so text from a
conversation is shown as text; a content security policy that allows only the page's own
script and stylesheet stands behind that. A browser signs in once with the proxy's token and
keeps a cookie holding an HMAC of it, never the token; a forget is a POST carrying a value
only the page's own form knows, confirmed on a page of its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit

try:
    import jinja2
except ImportError as error:
    raise ImportError(
        "the operator's page needs Jinja2: pip install 'synopsis[ui]' (or 'synopsis[proxy]')"
    ) from error
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from synopsis.ui import data
from synopsis.ui.charts import time_chart, tokens_chart
from synopsis.ui.format import FILTERS

if TYPE_CHECKING:
    from starlette.requests import Request

    from synopsis.stores._base import StoreBase

__all__ = ["COOKIE", "create_ui"]

COOKIE = "synopsis_ui"
_FORM_LIMIT = 16 * 1024
_STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": _POLICY,
    "x-content-type-options": "nosniff",
    # Not no-referrer: under it a browser sends "Origin: null" with a form's POST, and the
    # forget form's origin check refuses it. same-origin keeps URLs from every other site.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class _Ui:
    """What the routes share: the store, the templates, and the secrets."""

    def __init__(
        self,
        store: StoreBase,
        *,
        auth_token: str | None,
        read_only: bool,
        limits: data.Limits,
        refresh: float,
    ) -> None:
        self.store = store
        self.read_only = read_only
        self.limits = limits
        self.refresh = refresh
        self.signed = None if auth_token is None else _sign(auth_token.encode(), b"sign-in")
        self.token = auth_token
        self.secret = secrets.token_bytes(32)
        """Signs the forget forms; new each start, so a form from before a restart is stale."""
        templates = resources.files("synopsis.ui") / "templates"
        self.env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (templates / name).read_text("utf-8")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(FILTERS)
        self.static = {
            name: (resources.files("synopsis.ui") / "static" / name).read_bytes()
            for name in _STATIC
        }

    def signed_in(self, request: Request) -> bool:
        if self.signed is None or self.token is None:
            return True
        cookie = request.cookies.get(COOKIE, "")
        if hmac.compare_digest(cookie.encode("latin-1", "replace"), self.signed.encode()):
            return True
        given = request.headers.get("x-synopsis-token", "").encode("latin-1")
        return hmac.compare_digest(given, self.token.encode())

    def csrf(self, session_id: str) -> str:
        return _sign(self.secret, b"forget:" + session_id.encode("utf-8", "surrogatepass"))

    def page(self, request: Request, name: str, status: int = 200, **values: Any) -> Response:  # noqa: ANN401
        root = request.scope.get("root_path", "")
        html = self.env.get_template(name).render(
            root=root,
            here=request.url.path,
            signed=self.signed is not None,
            refresh=self.refresh,
            read_only=self.read_only,
            **values,
        )
        return HTMLResponse(html, status_code=status, headers=_HEADERS)


def _sign(key: bytes, what: bytes) -> str:
    return hmac.new(key, what, hashlib.sha256).hexdigest()


def _ui(request: Request) -> _Ui:
    found: _Ui = request.app.state.ui
    return found


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first value of each), read up to a small limit."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _FORM_LIMIT:
            return {}
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items()}


def _same_origin(request: Request) -> bool:
    """Whether a POST comes from this page: a browser names the page's origin on every POST
    (an older one may send none, and SameSite keeps the cookie from other sites anyway)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _home(request: Request, path: str = "/") -> str:
    root: str = request.scope.get("root_path", "")
    return root + path


async def _login(request: Request) -> Response:
    ui = _ui(request)
    wanted = request.query_params.get("next", "")
    if request.method == "GET":
        return ui.page(request, "login.html", wrong=False, next=wanted)
    form = await _form(request)
    token = form.get("token", "")
    wanted = form.get("next", "")
    if ui.token is None or not hmac.compare_digest(token.encode(), ui.token.encode()):
        return ui.page(request, "login.html", status=401, wrong=True, next=wanted)
    root = _home(request)
    # Only a path of this page: a sign-in link must not send the browser elsewhere.
    target = wanted if wanted.startswith(root) and not wanted.startswith("//") else root
    response = RedirectResponse(target, status_code=303, headers=_HEADERS)
    response.set_cookie(
        COOKIE,
        ui.signed or "",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=root or "/",
    )
    return response


async def _logout(request: Request) -> Response:
    response = RedirectResponse(_home(request, "/login"), status_code=303, headers=_HEADERS)
    response.delete_cookie(COOKIE, path=_home(request) or "/")
    return response


async def _overview(request: Request) -> Response:
    ui = _ui(request)
    span = request.query_params.get("range", "24h")
    span = span if span in data.RANGES else "24h"
    found = await asyncio.to_thread(data.overview, ui.store, span)
    tokens = time_chart(found.times, found.tokens, title="Tokens", unit="tokens", id_prefix="t")
    counts = time_chart(found.times, found.counts, title="Requests", id_prefix="r")
    return ui.page(
        request, "overview.html", o=found, ranges=list(data.RANGES), tokens=tokens, counts=counts
    )


async def _sessions(request: Request) -> Response:
    ui = _ui(request)
    q = request.query_params
    found = await asyncio.to_thread(
        data.session_page,
        ui.store,
        q=q.get("q", ""),
        sort=q.get("sort", "last_seen"),
        order=q.get("order", "desc"),
        page=_int(q.get("page"), 1),
    )
    forgot = q.get("forgot")
    return ui.page(request, "sessions.html", p=found, sorts=data.SORTS, forgot=forgot)


def _missing(request: Request, session_id: str) -> Response:
    return _ui(request).page(request, "missing.html", status=404, session_id=session_id)


async def _session(request: Request) -> Response:
    ui = _ui(request)
    q = request.query_params
    sid = q.get("id", "")
    found = await asyncio.to_thread(
        data.session_view,
        ui.store,
        sid,
        limits=ui.limits,
        opened=q.get("c"),
        page=_int(q.get("page"), 1),
    )
    if found is None:
        return _missing(request, sid)
    chart = tokens_chart(
        found.points, window=found.window, trigger=found.trigger, title="Tokens per request"
    )
    return ui.page(
        request, "session.html", s=found, chart=chart, csrf=ui.csrf(sid), request_opened=q.get("c")
    )


async def _search(request: Request) -> Response:
    ui = _ui(request)
    sid, query = request.query_params.get("id", ""), request.query_params.get("q", "")
    hits = await asyncio.to_thread(data.search, ui.store, sid, query) if query.strip() else []
    return ui.page(request, "search.html", session_id=sid, q=query, hits=hits)


async def _export(request: Request) -> Response:
    from synopsis.stores.export import export_markdown  # noqa: PLC0415 - only here

    ui = _ui(request)
    sid = request.query_params.get("id", "")
    if await asyncio.to_thread(ui.store.session, sid) is None and not await asyncio.to_thread(
        ui.store.recall, sid, start=0, stop=1
    ):
        return _missing(request, sid)
    text = await asyncio.to_thread(export_markdown, ui.store, sid)
    name = _FILENAME.sub("_", sid)[:80] or "session"
    headers = {**_HEADERS, "content-disposition": f'attachment; filename="{name}.md"'}
    return PlainTextResponse(text, headers=headers, media_type="text/markdown")


async def _forget(request: Request) -> Response:
    ui = _ui(request)
    if ui.read_only:
        return PlainTextResponse("this page is read-only", status_code=403, headers=_HEADERS)
    form = await _form(request)
    sid = form.get("id", "")
    if not _same_origin(request) or not hmac.compare_digest(
        form.get("csrf", "").encode(), ui.csrf(sid).encode()
    ):
        return PlainTextResponse(
            "this form is stale or not from this page: open the session again",
            status_code=403,
            headers=_HEADERS,
        )
    if form.get("confirm") != "yes":
        state = await asyncio.to_thread(ui.store.session, sid)
        stored = len(await asyncio.to_thread(ui.store.recall, sid))
        return ui.page(
            request, "forget.html", session_id=sid, state=state, stored=stored, csrf=ui.csrf(sid)
        )
    await asyncio.to_thread(ui.store.forget, sid)
    target = _home(request, "/sessions?forgot=" + quote(sid, safe=""))
    return RedirectResponse(target, status_code=303, headers=_HEADERS)


async def _static(request: Request) -> Response:
    ui = _ui(request)
    name = request.path_params["name"]
    if name not in ui.static:
        return PlainTextResponse("not found", status_code=404)
    headers = {"x-content-type-options": "nosniff", "cache-control": "max-age=300"}
    return Response(ui.static[name], media_type=_STATIC[name], headers=headers)


_OPEN = {"_login", "_static"}


def _guarded(endpoint: Any) -> Any:  # noqa: ANN401 - a Starlette endpoint
    """``endpoint`` behind the sign-in: a browser is sent to the sign-in page, anything else
    gets a 401."""
    if endpoint.__name__ in _OPEN:
        return endpoint

    async def guarded(request: Request) -> Response:
        ui = _ui(request)
        if ui.signed_in(request):
            return await endpoint(request)  # type: ignore[no-any-return]
        if request.method == "GET":
            wanted = quote(
                request.url.path + ("?" + request.url.query if request.url.query else "")
            )
            return RedirectResponse(_home(request, f"/login?next={wanted}"), status_code=303)
        return PlainTextResponse("sign in first", status_code=401, headers=_HEADERS)

    return guarded


def create_ui(
    store: StoreBase,
    *,
    auth_token: str | None = None,
    read_only: bool = False,
    limits: data.Limits | None = None,
    refresh: float = 5.0,
) -> Starlette:
    """The page over ``store``, to mount (``synopsis serve`` mounts it at ``/ui``).

    ``auth_token``: a browser signs in with it once (``None``: open, as the proxy is without
    a token). ``read_only``: no forgetting sessions. ``limits``: a model's window and trigger
    tokens, marked on a session's chart (default: the model table and an 80% trigger).
    ``refresh``: seconds between two updates of an open page (0: none).
    """
    if auth_token == "":
        raise ValueError("auth_token is empty: give a token, or None for no sign-in")
    if limits is None:
        from synopsis.planning.triggers import Trigger  # noqa: PLC0415

        limits = data.limits_for(Trigger.fraction(0.8))
    ui = _Ui(store, auth_token=auth_token, read_only=read_only, limits=limits, refresh=refresh)
    routes = [
        Route("/", _guarded(_overview), methods=["GET"]),
        Route("/login", _guarded(_login), methods=["GET", "POST"]),
        Route("/logout", _guarded(_logout), methods=["POST"]),
        Route("/sessions", _guarded(_sessions), methods=["GET"]),
        Route("/session", _guarded(_session), methods=["GET"]),
        Route("/session/search", _guarded(_search), methods=["GET"]),
        Route("/session/export.md", _guarded(_export), methods=["GET"]),
        Route("/session/forget", _guarded(_forget), methods=["POST"]),
        Route("/static/{name}", _guarded(_static), methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.ui = ui
    return app
