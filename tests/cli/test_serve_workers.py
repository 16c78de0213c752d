"""``synopsis serve --workers N`` and ``--max-body-size``: N processes serving one proxy on a
store they share (refused for the in-memory store, which they could not share), and the body
limit handed to the app."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2
import pytest

from synopsis.cli import build_parser, main, serve
from synopsis.cli.serve import _WORKER_ARGS, app_for, worker_app
from synopsis.proxy.defaults import MAX_BODY_SIZE
from synopsis.testing.server import FakeLLMServer, Reply, chat_completion
from tests.cli.test_serve import serving

if TYPE_CHECKING:
    from synopsis.testing.server import Recorded


def _workers(pid: int) -> list[int]:
    """The worker processes ``pid`` started (Linux's /proc says), not its other helpers
    (multiprocessing's resource tracker)."""
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(p) for p in found if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]


def _answer(recorded: Recorded) -> Reply:
    return Reply(chat_completion("ok"))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_two_workers_on_a_sqlite_file_answer_and_compact(tmp_path: Path) -> None:
    store = tmp_path / "proxy.db"
    with (
        FakeLLMServer(default=_answer) as upstream,
        serving(
            "--upstream-openai", upstream.root, "--workers", "2", "--store", str(store),
            "--window", "1500", "--timeout", "30",
        ) as (url, served),
    ):  # fmt: skip
        assert len(_workers(served.process.pid)) == 2
        history = [{"role": "system", "content": "Be brief."}]
        compacted = []
        for turn in range(30):
            history.append({"role": "user", "content": f"question {turn}: " + "word " * 60})
            # A connection of its own each time: the workers take turns accepting them.
            answer = served.check(
                httpx2.post,
                f"{url}/v1/chat/completions",
                json={"model": "gpt-4o", "messages": history},
                headers={"x-synopsis-session": "shared"},
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
            compacted.append(answer.headers["x-synopsis-compacted"] == "true")
            history.append({"role": "assistant", "content": "ok"})
        assert any(compacted)
        # Every request reached the upstream, each shorter than the history once compacted.
        sent = [len(r.body["messages"]) for r in upstream.requests]
        assert len(sent) == 30
        assert sent[-1] < len(history) - 1
        assert served.stop() == 0
    assert store.exists()


@pytest.mark.parametrize("flags", [[], ["--store", "memory"]])
def test_workers_are_refused_the_in_memory_store(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--workers", "2", *flags]) == 2
    assert capsys.readouterr().err == (
        "synopsis: error: --workers needs a shared store (a SQLite file or postgresql:// URL), "
        "not memory\n"
    )


def test_a_worker_builds_its_app_from_the_options_handed_over(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    args = build_parser().parse_args(
        ["serve", "--store", str(tmp_path / "s.db"), "--max-body-size", "1000",
         "--model-window", "local=4096", "--workers", "2"]
    )  # fmt: skip
    handed = {k: v for k, v in vars(args).items() if k != "run"}
    monkeypatch.setenv(_WORKER_ARGS, json.dumps(handed))
    app = worker_app()
    state = app.state.proxy
    assert state.max_body_size == 1000
    assert state.compactors.window("local") == 4096
    state.compactors.close()
    # Its HTTP protocol too, imported by name, with the command's header timeout.
    from uvicorn.importer import import_from_string  # noqa: PLC0415

    protocol = import_from_string("synopsis.cli.serve:WorkerProtocol")
    assert protocol.__name__ == "HeaderTimed"
    with pytest.raises(AttributeError, match="no attribute 'Elsewhere'"):
        _ = serve.Elsewhere


def test_the_body_limit_defaults_to_32_mib() -> None:
    app = app_for(build_parser().parse_args(["serve"]))
    assert app.state.proxy.max_body_size == MAX_BODY_SIZE == 32 * 1024 * 1024
    app.state.proxy.compactors.close()


def test_workers_on_a_port_taken_are_refused_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        store = str(tmp_path / "s.db")
        assert main(["serve", "--workers", "2", "--store", store, "--port", port]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"synopsis: error: cannot listen on 127.0.0.1:{port}: ")
    assert len(err.splitlines()) == 1
