"""The page where an operator finds it: inside ``synopsis serve`` and from ``synopsis ui``."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import httpx2
import pytest
from starlette.testclient import TestClient

from synopsis.cli import build_parser, main
from synopsis.cli.serve import _started as serve_started
from synopsis.cli.serve import app_for as serve_app_for
from synopsis.cli.ui import app_for
from synopsis.proxy import create_app
from synopsis.stores import MemoryStore, PostgresStore
from synopsis.stores.records import SessionState
from tests.cli.test_end_to_end import SCRIPT
from tests.proxy.test_observability import CHAT, COMPACTING, HISTORY, eventually, proxied
from tests.ui import sample

if TYPE_CHECKING:
    from pathlib import Path

TOKEN = "page-token"


def test_the_proxy_serves_the_page_behind_its_token(tmp_path: Path) -> None:
    options = {**COMPACTING, "store": str(tmp_path / "p.db"), "auth_token": TOKEN}
    with proxied(**options) as (_, _served, client):
        headers = {"x-synopsis-session": "seen-by-the-page", "x-synopsis-token": TOKEN}
        client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY}, headers=headers)
        bare = client.get("/ui", follow_redirects=False)
        assert (bare.status_code, bare.headers["location"]) == (308, "/ui/")
        assert client.get("/ui/", follow_redirects=False).status_code == 303
        signed = client.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
        assert signed.status_code == 303
        assert "synopsis_ui" in client.cookies

        def listed() -> bool:
            page = client.get("/ui/sessions")
            # Its state is saved with the compaction; its record, off the request's path.
            return "seen-by-the-page" in page.text and "gpt-4o" in page.text

        assert eventually(listed, within=5.0)
        page = client.get("/ui/session?id=seen-by-the-page").text
        assert "gpt-4o" in page
        assert "Forget this session" in page


def test_no_ui_leaves_the_path_to_the_upstream() -> None:
    with proxied(ui=False) as (fake, _served, client):
        client.get("/ui/")
        assert [r.path for r in fake.requests][-1].endswith("/ui/")


def test_a_store_of_another_kind_gets_no_page() -> None:
    class Foreign:
        """A store by the protocol alone, not one of synopsis's own."""

        def __init__(self) -> None:
            self._inner = MemoryStore()

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    def paths(store: object) -> set[str]:
        app = create_app(store=store, environ={})
        found = {getattr(r, "path", "") for r in app.routes}
        app.state.proxy.compactors.close()
        return found

    assert "/ui" in paths(MemoryStore())
    assert "/ui" not in paths(Foreign())


def test_serve_names_its_page_and_no_ui_drops_it() -> None:
    for flags, page in (([], True), (["--no-ui"], False)):
        args = build_parser().parse_args(["serve", *flags])
        app = serve_app_for(args)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            line = serve_started(args, app.state.proxy, sock)
        app.state.proxy.compactors.close()
        assert ("· page: http://127.0.0.1:" in line) is page
        assert any(getattr(r, "path", "") == "/ui" for r in app.routes) is page


def test_synopsis_ui_serves_a_store_read_only(tmp_path: Path) -> None:
    built = sample.build(tmp_path / "lib.db")
    built.store.close()
    flags = ["ui", "--store", str(tmp_path / "lib.db"), "--trigger", "0.5", "--window", "9000"]
    app = app_for(build_parser().parse_args(flags))
    with TestClient(app) as client:
        assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
        page = client.get("/ui/session?id=" + sample.CODING).text
        assert "read-only" in page
        assert "Forget" not in page
        # The window and trigger given mark the chart (9,000 at a half).
        assert "4,500" in page


def test_synopsis_ui_runs_and_says_where(tmp_path: Path) -> None:
    built = sample.build(tmp_path / "run.db")
    built.store.close()
    process = subprocess.Popen(
        [SCRIPT, "ui", "--store", str(tmp_path / "run.db"), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("synopsis ui: http://127.0.0.1:")
        url = line.split()[2]
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = httpx2.get(url + "sessions", timeout=2)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert sample.CODING in answer.text
    finally:
        process.send_signal(signal.SIGINT)  # as Ctrl-C: a clean stop, its coverage written
        assert process.wait(15) == 0
        assert process.stderr is not None
        process.stderr.close()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--store", "nowhere.db"], "no store at nowhere.db"),
        (["--store", "x.db", "--trigger", "2"], "expected a fraction above 0 and at most 1"),
        (["--store", "x.db", "--trigger", "most"], "expected a fraction, got 'most'"),
    ],
)
def test_synopsis_ui_refuses_in_one_line(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ui", *flags]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_without_jinja2_each_command_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "synopsis.ui.app")
    (tmp_path / "s.db").touch()
    assert main(["ui", "--store", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'synopsis[ui]'" in err
    assert main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "needs Jinja2" in err
    assert "--no-ui" in err


def test_a_postgres_store_without_its_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "synopsis.stores.postgres", raising=False)
    assert main(["ui", "--store", "postgresql://u@127.0.0.1:9/db"]) == 2
    assert 'pip install "synopsis[postgres]"' in capsys.readouterr().err


def test_a_page_beyond_loopback_warns_and_a_busy_port_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sample.build(tmp_path / "w.db").store.close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", 0))
        taken.listen()
        port = taken.getsockname()[1]
        flags = ["ui", "--store", str(tmp_path / "w.db"), "--host", "127.0.0.2"]
        assert main([*flags, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "warning: listening on 127.0.0.2: anyone who can reach it can read" in err
    assert f"synopsis: error: cannot listen on 127.0.0.2:{port}" in err


def test_every_replica_on_one_postgresql_store_shows_the_fleet(postgres_url: str) -> None:
    options = {**COMPACTING, "store": postgres_url}
    with proxied(**options) as (_, _a, first), proxied(**options) as (_, _b, second):
        for client, name in ((first, "via-first"), (second, "via-second")):
            headers = {"x-synopsis-session": name}
            client.post(CHAT, json={"model": "gpt-4o", "messages": HISTORY}, headers=headers)

        def both_shown(client: httpx2.Client) -> bool:
            page = client.get("/ui/sessions").text
            return "via-first" in page and "via-second" in page and "gpt-4o" in page

        assert eventually(lambda: both_shown(first), within=5.0)
        assert eventually(lambda: both_shown(second), within=5.0)


def test_synopsis_ui_reads_a_postgresql_store(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        store.save_session(SessionState(session_id="kept-in-postgres"))
    app = app_for(build_parser().parse_args(["ui", "--store", postgres_url]))
    with TestClient(app) as client:
        assert "kept-in-postgres" in client.get("/ui/sessions").text
