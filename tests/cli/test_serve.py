"""``synopsis serve`` as a user runs it: the installed command in a process of its own, on a
free port of 127.0.0.1, in front of a fake upstream, stopped by its process id."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, TypeVar

import httpx2
import openai
import pytest

from synopsis.cli import build_parser, main
from synopsis.cli.serve import app_for
from synopsis.testing.server import FakeLLMServer, Reply, chat_completion
from tests.cli.test_end_to_end import SCRIPT

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path


def started_at(stderr: str) -> str:
    """The address the command's start-up line names ("" before it is written)."""
    for line in stderr.splitlines():
        if line.startswith("{") and '"proxy_started"' in line:
            return str(json.loads(line)["listening"])
        if line.startswith("synopsis serve: listening on "):
            return line.split()[4]
    return ""


class Serving:
    """The command's process, and what it wrote on stderr so far."""

    def __init__(self, process: subprocess.Popen[bytes], err: IO[bytes]) -> None:
        self.process = process
        self._err = err

    def check(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``call``'s value; if it raises, the error with what the command wrote."""
        try:
            return call(*args, **kwargs)
        except Exception as error:
            raise AssertionError(f"{error}; serve wrote: {self.stderr}") from error

    def stop(self) -> int:
        """Interrupt it as Ctrl-C does; its exit code."""
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(15)

    @property
    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read().decode()


@contextmanager
def serving(*flags: str, host: str = "127.0.0.1") -> Iterator[tuple[str, Serving]]:
    """The command running with ``flags`` on a port of its choosing (``--port 0``), read from
    the line it says at start; its root URL once it answers /healthz."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNOPSIS_")}
    err = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the block ends, below
    process = subprocess.Popen(
        [SCRIPT, "serve", "--host", host, "--port", "0", *flags],
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=env,
    )
    served = Serving(process, err)
    try:
        deadline = time.monotonic() + 30
        url = ""
        while True:
            if process.poll() is not None:
                raise AssertionError(f"serve exited: {served.stderr}")
            url = url or started_at(served.stderr)
            try:
                if url and httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"serve did not start within 30 s: {served.stderr}")
            time.sleep(0.1)
        yield url, served
    finally:
        if process.poll() is None:
            try:
                served.stop()
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        err.close()


def test_serve_compacts_for_a_real_client_and_stops_cleanly(tmp_path: Path) -> None:
    store = tmp_path / "proxy.db"
    with (
        FakeLLMServer(default=lambda _: Reply(chat_completion("ok"))) as upstream,
        serving(
            "--upstream-openai", upstream.root, "--window", "1500", "--store", str(store),
            "--log-json", "--timeout", "30",
        ) as (url, served),
    ):  # fmt: skip
        history = [{"role": "system", "content": "Be brief."}]
        with openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0) as client:
            compacted = []
            for turn in range(30):
                history.append({"role": "user", "content": f"question {turn}: " + "word " * 60})
                raw = served.check(
                    client.chat.completions.with_raw_response.create,
                    model="gpt-4o",
                    messages=history,
                )
                history.append({"role": "assistant", "content": "ok"})
                compacted.append(raw.headers["x-synopsis-compacted"] == "true")
        sent = upstream.requests[-1].body["messages"]
        assert any(compacted)
        assert len(sent) < len(history) - 1  # the upstream got less than the client keeps
        assert served.stop() == 0
        err = served.stderr
    said = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    started, *lines = said
    assert started["event"] == "proxy_started"
    assert started["listening"] == url
    assert started["store"] == f"the SQLite file {store}"
    assert started["windows"] == "--window 1,500 for every model"
    assert len(lines) == 30
    assert all(line["event"] == "proxy_request" and line["status"] == 200 for line in lines)
    assert "sk-test" not in err
    assert store.exists()  # sessions and originals went to the SQLite file asked for


def test_serve_warns_when_it_listens_beyond_this_machines_loopback_name() -> None:
    # 127.0.0.2 is still this machine, but not a name the command knows as local.
    with serving("--upstream-openai", "http://127.0.0.1:9", host="127.0.0.2") as (_, served):
        served.stop()
        err = served.stderr
    assert "warning: listening on 127.0.0.2" in err
    assert "--auth-token" in err


def test_serve_says_in_one_line_where_it_listens_and_with_what() -> None:
    flags = ["--upstream-openai", "http://127.0.0.1:9/v1", "--model-window", "local=8000"]
    with serving(*flags, "--auth-token", "t0ken") as (url, served):
        served.stop()
        err = served.stderr
    (line,) = [line for line in err.splitlines() if line.startswith("synopsis serve:")]
    assert line == (
        f"synopsis serve: listening on {url} · upstreams: openai http://127.0.0.1:9/v1, "
        "anthropic https://api.anthropic.com · store: memory (gone when it stops) · auth: on "
        "(x-synopsis-token) · windows: the model table (an unknown model: 200,000, said when "
        f"first named); local 8,000 · page: {url}/ui/"
    )
    assert "t0ken" not in err


def test_a_busy_port_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err == f"synopsis: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_a_store_that_cannot_be_reached_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as held:  # bound, not listening: the connection is refused
        held.bind(("127.0.0.1", 0))
        url = f"postgresql://synopsis@127.0.0.1:{held.getsockname()[1]}/db"
        assert main(["serve", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"synopsis: error: cannot reach the store {url}")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model-window", "gpt-4o"], "expected MODEL=TOKENS"),
        (["--model-window", "gpt-4o=0"], "expected a positive number"),
        (["--timeout", "0"], "expected a positive number of seconds"),
        (["--timeout", "soon"], "expected seconds"),
        (["--timeout", "nan"], "expected a positive number of seconds"),
        (["--port", "http"], "expected a port number, got 'http'"),
        (["--port", "70000"], "expected a port from 0 to 65535, got 70000"),
        (["--port", "-1"], "expected a port from 0 to 65535, got -1"),
    ],
)
def test_bad_flags_are_refused_with_a_sentence(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *flags]) == 2
    assert message in capsys.readouterr().err


def test_a_model_window_reaches_the_proxy() -> None:
    args = build_parser().parse_args(
        ["serve", "--model-window", "local-model=4096", "--window", "9000", "--trigger", "0.75"]
    )
    app = app_for(args)
    compactors = app.state.proxy.compactors
    assert compactors.window("local-model") == 4096
    assert compactors.window("gpt-4o") == 9000
    compactors.close()
    assert sys.modules["synopsis.proxy.app"] is not None


@pytest.mark.parametrize(("flags", "told"), [([], "raise"), (["--forward-unreachable"], "return")])
def test_forward_unreachable_reaches_the_compactors(flags: list[str], told: str) -> None:
    app = app_for(build_parser().parse_args(["serve", *flags]))
    compactors = app.state.proxy.compactors
    assert compactors.for_model("gpt-4o").setup.on_unreachable == told
    compactors.close()


@pytest.mark.parametrize(
    ("flags", "told"),
    [
        ([], True),
        (["--context-management", "pass"], False),
        (["--upstream-anthropic", "https://api.anthropic.com"], False),
        (
            [
                "--upstream-anthropic",
                "https://api.anthropic.com",
                "--context-management",
                "emulate",
            ],
            True,
        ),
    ],
)
def test_context_management_reaches_the_proxy(flags: list[str], told: bool) -> None:
    app = app_for(
        build_parser().parse_args(["serve", "--upstream-anthropic", "http://127.0.0.1:9", *flags])
    )
    assert app.state.proxy.native_anthropic is told
    app.state.proxy.compactors.close()


def test_without_the_proxy_extra_the_command_names_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "orjson", None)  # as if it were not installed
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert 'the proxy needs the "proxy" extra (orjson is missing)' in err
    assert 'pip install "synopsis[proxy]"' in err


def test_the_proxy_package_has_only_its_own_names() -> None:
    import synopsis.proxy as proxy  # noqa: PLC0415

    assert proxy.DEFAULT_UPSTREAMS["openai"].startswith("https://")
    with pytest.raises(AttributeError, match="no attribute 'serve'"):
        proxy.serve  # noqa: B018


def test_an_llm_summarizer_without_a_key_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["serve", "--summarizer", "openai"]) == 2
    assert "no API key for openai" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "told"),
    [([], ("summarize",)), (["--strategy", "clear,summarize"], ("clear", "summarize"))],
)
def test_the_strategy_reaches_the_compactors(flags: list[str], told: tuple[str, ...]) -> None:
    app = app_for(build_parser().parse_args(["serve", *flags]))
    compactors = app.state.proxy.compactors
    assert compactors.for_model("gpt-4o").setup.strategy == told
    compactors.close()
