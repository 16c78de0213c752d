"""The operator's page, rendered from a real SQLite store through its ASGI app."""

from __future__ import annotations

import re
from html import unescape
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from synopsis import Compactor
from synopsis.stores import SQLiteStore
from synopsis.stores.export import export_markdown
from synopsis.stores.records import SessionState
from synopsis.ui import data
from synopsis.ui.app import COOKIE, create_ui
from synopsis.ui.format import tokens
from tests.ui import sample

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from synopsis.stores._base import StoreBase

TOKEN = "a-token-of-the-proxy"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sample.Sample]:
    found = sample.build(tmp_path_factory.mktemp("ui") / "store.db")
    yield found
    found.store.close()


def _client(store: StoreBase, **options: object) -> TestClient:
    page = create_ui(store, limits=lambda model: (sample.WINDOW, 4800), **options)  # type: ignore[arg-type]
    return TestClient(Starlette(routes=[Mount("/ui", app=page)]), base_url="http://testserver")


@pytest.fixture
def signed(built: sample.Sample) -> TestClient:
    client = _client(built.store, auth_token=TOKEN)
    answer = client.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    assert answer.status_code == 303
    return client


def _text(html: str) -> str:
    """What a reader sees: the tags gone, the entities read."""
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_a_browser_is_sent_to_sign_in_and_back(built: sample.Sample) -> None:
    client = _client(built.store, auth_token=TOKEN)
    first = client.get("/ui/sessions?q=x", follow_redirects=False)
    assert first.status_code == 303
    assert first.headers["location"] == "/ui/login?next=" + quote("/ui/sessions?q=x")
    wrong = client.post("/ui/login", data={"token": "nope", "next": "/ui/sessions"})
    assert wrong.status_code == 401
    assert COOKIE not in client.cookies
    right = client.post(
        "/ui/login", data={"token": TOKEN, "next": "/ui/sessions"}, follow_redirects=False
    )
    assert right.headers["location"] == "/ui/sessions"
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert TOKEN not in cookie
    assert client.get("/ui/sessions").status_code == 200


def test_the_token_is_never_written_in_a_page(signed: TestClient, built: sample.Sample) -> None:
    for path in ("/ui/", "/ui/sessions", f"/ui/session?id={quote(sample.CODING)}", "/ui/login"):
        assert TOKEN not in signed.get(path).text


def test_a_sign_in_never_sends_the_browser_elsewhere(built: sample.Sample) -> None:
    client = _client(built.store, auth_token=TOKEN)
    for elsewhere in ("//evil.example/x", "https://evil.example/", "/other"):
        answer = client.post(
            "/ui/login", data={"token": TOKEN, "next": elsewhere}, follow_redirects=False
        )
        assert answer.headers["location"] == "/ui/"


def test_a_client_may_show_the_token_in_the_header(built: sample.Sample) -> None:
    client = _client(built.store, auth_token=TOKEN)
    assert client.get("/ui/", headers={"x-synopsis-token": TOKEN}).status_code == 200
    assert client.post("/ui/session/forget", data={}).status_code == 401


def test_signing_out_forgets_the_cookie(signed: TestClient) -> None:
    answer = signed.post("/ui/logout", follow_redirects=False)
    assert answer.headers["location"] == "/ui/login"
    assert signed.get("/ui/", follow_redirects=False).status_code == 303


def test_without_a_token_the_page_is_open(built: sample.Sample) -> None:
    assert _client(built.store).get("/ui/").status_code == 200


def test_an_empty_token_is_refused(built: sample.Sample) -> None:
    with pytest.raises(ValueError, match="auth_token is empty"):
        create_ui(built.store, auth_token="")


def test_every_page_forbids_scripts_but_its_own(signed: TestClient) -> None:
    answer = signed.get("/ui/")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_the_overview_adds_up_the_records(signed: TestClient, built: sample.Sample) -> None:
    text = _text(signed.get("/ui/?range=24h").text)
    records = built.records
    before = sum(r.tokens_before or 0 for r in records)
    after = sum(r.tokens_after or 0 for r in records)
    assert f"Requests {len(records):,}" in " ".join(text.split())
    compacted = sum(r.compacted for r in records)
    assert f"Compacted requests {compacted:,}" in " ".join(text.split())
    assert f"Tokens saved {tokens(before - after)}" in " ".join(text.split())
    assert "bad_request" in text


def test_an_unknown_range_is_the_last_day(signed: TestClient) -> None:
    assert "Over the last 24h" in signed.get("/ui/?range=forever").text


def test_the_sessions_are_listed_sorted_and_found(signed: TestClient, built: sample.Sample) -> None:
    page = signed.get("/ui/sessions?sort=saved&order=desc").text
    saved = {
        sid: sum(
            (r.tokens_before or 0) - (r.tokens_after or 0)
            for r in built.records
            if r.session_id == sid
        )
        for sid in built.sessions
    }
    shown = [unescape(m) for m in re.findall(r'<a href="/ui/session\?id=[^"]*">([^<]*)</a>', page)]
    assert shown == sorted(saved, key=lambda s: (saved[s], s), reverse=True)
    found = signed.get("/ui/sessions?q=PONY").text
    assert sample.CODING in found
    assert "aider" not in found


def test_the_sessions_are_paged(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "many.db") as store:
        for i in range(data.PER_PAGE + 3):
            store.save_session(SessionState(session_id=f"s{i:03}"))
        client = _client(store)
        first = client.get("/ui/sessions?sort=length&order=asc").text
        second = client.get("/ui/sessions?sort=length&order=asc&page=2").text
        assert "page 1 of 2" in first
        assert first.count("/ui/session?id=") == data.PER_PAGE
        assert second.count("/ui/session?id=") == 3
        assert "page 2 of 2" in client.get("/ui/sessions?page=99").text


def test_a_session_shows_each_summary_beside_what_it_replaced(
    signed: TestClient, built: sample.Sample
) -> None:
    store = built.store
    summaries = store.summaries(sample.CODING)
    assert summaries
    page = signed.get(f"/ui/session?id={quote(sample.CODING)}").text
    for record in summaries:
        assert f'id="c-{record.id}"' in page
    replaced = [m for m in store.recall(sample.CODING) if m.compaction_id == summaries[-1].id]
    shown = page.split(f'id="c-{summaries[-1].id}"')[1].split("</details>")[0]
    for message in replaced[: data.ORIGINALS_PER_PAGE]:
        assert f"position {message.position} " in _text(shown)


def test_a_cleared_output_is_shown_with_its_recall(
    signed: TestClient, built: sample.Sample
) -> None:
    summarized = {r.id for r in built.store.summaries(sample.CLEARED)}
    cleared = [
        m
        for m in built.store.recall(sample.CLEARED)
        if m.id.startswith("r-") and m.compaction_id not in summarized
    ]
    assert cleared
    page = signed.get(f"/ui/session?id={quote(sample.CLEARED)}").text
    assert "recall_history" in page
    assert cleared[0].id in page


def test_markup_in_a_session_is_shown_as_text(signed: TestClient) -> None:
    for path in ("/ui/sessions", f"/ui/session?id={quote(sample.CHAT)}"):
        page = signed.get(path).text
        assert "<script>window" not in page
        assert "<img src=x" not in page
        assert "&lt;script&gt;window.__ran=1&lt;/script&gt;" in page


def test_an_unknown_session_is_a_404(signed: TestClient) -> None:
    answer = signed.get("/ui/session?id=never")
    assert answer.status_code == 404
    assert "never" in answer.text
    assert signed.get("/ui/session/export.md?id=never").status_code == 404


def test_search_marks_the_words_found(signed: TestClient, built: sample.Sample) -> None:
    query = "cmake"
    hits = built.store.search(sample.CODING, query, limit=50)
    page = signed.get(f"/ui/session/search?id={quote(sample.CODING)}&q={query}").text
    assert f"{len(hits)} match" in page
    assert re.search(r"<mark>cmake</mark>", page, re.IGNORECASE)
    assert "match" not in signed.get(f"/ui/session/search?id={quote(sample.CODING)}&q=").text


def test_the_export_is_the_stores_markdown(signed: TestClient, built: sample.Sample) -> None:
    answer = signed.get(f"/ui/session/export.md?id={quote(sample.CHAT)}")
    assert answer.text == export_markdown(built.store, sample.CHAT)
    disposition = answer.headers["content-disposition"]
    assert "<" not in disposition
    assert disposition.endswith('.md"')


def test_forgetting_asks_first_and_refuses_a_forged_form(tmp_path: Path) -> None:
    found = sample.build(tmp_path / "forget.db")
    client = _client(found.store, auth_token=TOKEN)
    client.post("/ui/login", data={"token": TOKEN})
    page = client.get(f"/ui/session?id={quote(sample.CODING)}").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert csrf is not None
    form = {"id": sample.CODING, "csrf": csrf.group(1)}
    assert client.post("/ui/session/forget", data={**form, "csrf": "0" * 64}).status_code == 403
    other = client.post("/ui/session/forget", data=form, headers={"origin": "http://evil.example"})
    assert other.status_code == 403
    asked = client.post("/ui/session/forget", data=form)
    assert "cannot be undone" in asked.text
    assert found.store.session(sample.CODING) is not None
    done = client.post(
        "/ui/session/forget",
        data={**form, "confirm": "yes"},
        headers={"origin": "http://testserver"},
        follow_redirects=False,
    )
    assert done.status_code == 303
    assert found.store.session(sample.CODING) is None
    assert not found.store.recall(sample.CODING)
    assert "was forgotten" in client.get(done.headers["location"]).text
    found.store.close()


def test_a_read_only_page_forgets_nothing(built: sample.Sample) -> None:
    client = _client(built.store, read_only=True)
    page = client.get(f"/ui/session?id={quote(sample.CODING)}").text
    assert "Forget" not in page
    assert client.post("/ui/session/forget", data={"id": sample.CODING}).status_code == 403
    assert built.store.session(sample.CODING) is not None


def test_the_static_files_are_served_and_nothing_else(signed: TestClient) -> None:
    assert signed.get("/ui/static/ui.js").headers["content-type"].startswith("text/javascript")
    assert signed.get("/ui/static/ui.css").status_code == 200
    assert signed.get("/ui/static/other.js").status_code == 404


def test_a_bad_page_number_is_the_first(signed: TestClient) -> None:
    assert "Sessions" in signed.get("/ui/sessions?page=x&sort=nothing&order=up").text


def test_a_form_too_large_is_not_read(built: sample.Sample) -> None:
    client = _client(built.store, auth_token=TOKEN)
    answer = client.post("/ui/login", data={"token": TOKEN, "pad": "x" * 20_000})
    assert answer.status_code == 401


def test_without_limits_the_model_table_marks_the_chart(built: sample.Sample) -> None:
    page = TestClient(Starlette(routes=[Mount("/ui", app=create_ui(built.store))]))
    # gpt-4o-mini's window, from the model table, at the default 80% trigger.
    text = _text(page.get(f"/ui/session?id={quote(sample.CODING)}").text)
    assert "Window 128,000" in " ".join(text.split())
    assert "Trigger 102,400" in " ".join(text.split())


def test_sessions_sort_by_compactions(signed: TestClient, built: sample.Sample) -> None:
    page = signed.get("/ui/sessions?sort=compactions&order=asc").text
    shown = [unescape(m) for m in re.findall(r'<a href="/ui/session\?id=[^"]*">([^<]*)</a>', page)]
    count = {sid: built.store.session(sid).compactions for sid in built.sessions}  # type: ignore[union-attr]
    assert shown == sorted(count, key=lambda s: (count[s], s))


def test_a_placeholder_in_the_history_is_shown_above_its_original(tmp_path: Path) -> None:
    """The newest compaction's placeholders, as the session's state keeps them."""
    with SQLiteStore(tmp_path / "cleared.db") as store:
        compactor = Compactor(
            model="gpt-4o-mini", context_window=sample.WINDOW, store=store, strategy=("clear",)
        )
        start = sample.transcript("sweagent-marshmallow-1867-fc")[:12]
        result = compactor.compact(start, session_id="s")
        compactor.close()
        assert result.compacted
        assert not store.summaries("s")
        state = store.session("s")
        assert state is not None
        hashes = {original for _, original, _ in state.projection["smaller"]}  # type: ignore[attr-defined]
        cleared = [m for m in store.recall("s") if m.sha256 in hashes]
        assert cleared
        text = " ".join(_text(_client(store).get("/ui/session?id=s").text).split())
        for message in cleared:
            after = text.split(f"id {message.id}")[1].lstrip()
            assert after.startswith("· cleared In the history now: [synopsis: cleared")
