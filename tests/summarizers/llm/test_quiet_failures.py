"""A summarizer that cannot work fails quickly and quietly: a missing key is one line at
construction, a server's long error body is cut in events and logs, a hanging server is given
up on by default, and nothing reaches stderr unless the application configured logging."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

import synopsis
from synopsis import Compactor, ConfigurationError, Settings, SummarizerFellBack
from synopsis.cli import main
from synopsis.compaction.setup import LLM_SUMMARIZER_TIMEOUT
from synopsis.errors import ERROR_CHARS
from synopsis.testing.server import chat_completion
from tests.compaction.helpers import load_items
from tests.compaction.test_incremental import CLEAN
from tests.compaction.test_setup import CHAT, SUMMARY_TEXT

if TYPE_CHECKING:
    from pathlib import Path

    from synopsis.compaction import SummarizerOption
    from synopsis.testing.server import FakeLLMServer

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize(
    ("kind", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_missing_key_is_one_line_at_construction(kind: SummarizerOption, variable: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Compactor(model="gpt-4o", summarizer=kind, environ={})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("no API key for ")
    assert variable in message
    with pytest.raises(ConfigurationError, match="no API key"):
        synopsis.compact(load_items(CLEAN), model="gpt-4o", summarizer=kind, environ={})


@pytest.mark.usefixtures("no_keys")
def test_the_cli_says_so_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "h.json"
    source.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    code = main(["compact", str(source), "--model", "gpt-4o", "--summarizer", "openai"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("synopsis: error: no API key for openai")


@pytest.mark.usefixtures("no_keys")
def test_a_server_of_ones_own_needs_no_key(llm_server: FakeLLMServer) -> None:
    llm_server.add(chat_completion(SUMMARY_TEXT))
    compactor = Compactor(
        model="gpt-4o", summarizer="openai", base_url=llm_server.base_url, environ={}
    )
    result = compactor.compact(list(CHAT), force=True)
    assert result.record is not None
    assert result.record.model == "gpt-test"
    assert not [e for e in result.events if isinstance(e, SummarizerFellBack)]


def test_a_key_in_the_environment_is_left_to_the_sdk(
    monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    llm_server.add(chat_completion(SUMMARY_TEXT))
    compactor = Compactor(
        model="gpt-4o", summarizer="openai", base_url=llm_server.base_url, environ={}
    )
    compactor.compact(list(CHAT), force=True)
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_a_long_error_body_is_cut_in_the_event_and_the_log(
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    body = "; ".join(f"field {n}: Input should be a valid string" for n in range(500))
    llm_server.error(400, body)
    compactor = Compactor(
        model="gpt-4o", summarizer="openai", base_url=llm_server.base_url, environ={}
    )
    with caplog.at_level(logging.WARNING, logger="synopsis"):
        result = compactor.compact(load_items(CLEAN), force=True)
    (fell,) = [e for e in result.events if isinstance(e, SummarizerFellBack)]
    assert len(body) > 20_000
    assert len(fell.reason) < 2 * ERROR_CHARS
    assert "more characters" in fell.reason
    assert "HTTP 400" in fell.reason
    assert caplog.records
    assert all(len(r.getMessage()) < 3 * ERROR_CHARS for r in caplog.records)


def test_a_hanging_server_is_given_up_on_within_a_minute_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    llm = Compactor(model="gpt-4o", summarizer="openai", environ={})
    assert llm.setup.summarizer_timeout == LLM_SUMMARIZER_TIMEOUT < 60
    # What runs here needs no watching: no thread is started for it.
    assert Compactor(model="gpt-4o", environ={}).setup.summarizer_timeout is None
    assert Settings().summarizer_timeout is None
    chosen = Compactor(model="gpt-4o", summarizer="openai", summarizer_timeout=5, environ={})
    assert chosen.setup.summarizer_timeout == 5


def test_nothing_reaches_stderr_unless_the_application_configures_logging() -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        import synopsis
        logging.getLogger("synopsis.summarizers").warning("a fall back")
        print("configured", file=sys.stderr, flush=True)
        logging.basicConfig(format="%(name)s: %(message)s")
        logging.getLogger("synopsis.summarizers").warning("now shown")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stderr.splitlines() == ["configured", "synopsis.summarizers: now shown"]
