"""Tests of synopsis.models, its bundled table, and scripts/gen_models.py."""

from __future__ import annotations

import gzip
import importlib.util
import json
import logging
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import synopsis
from synopsis import models
from synopsis.errors import ConfigurationError, SynopsisError, UnknownModelWarning
from synopsis.models import (
    DEFAULT_CONTEXT_WINDOW,
    ModelInfo,
    context_window,
    lookup,
    max_output_tokens,
    normalize_model_id,
)

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gen_models.py"
FIRST_PARTY = ("openai", "anthropic", "google", "mistral", "deepseek")
RECORD_KEYS = {"context", "output", "input", "family", "name", "release_date"}


def _data_text() -> str:
    return (resources.files("synopsis") / "data" / "models.json").read_text(encoding="utf-8")


DOC: dict[str, Any] = json.loads(_data_text())


def _record(provider: str, model_id: str) -> dict[str, Any]:
    record: dict[str, Any] = DOC["models"][provider][model_id]
    return record


@pytest.fixture(autouse=True)
def _fresh_state():
    models._warned.clear()
    yield
    models._warned.clear()


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_models", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- well-known anchors ------------------------------------------------------------------------


def test_anchor_gpt_4o_is_128k_in_data_and_lookup():
    assert _record("openai", "gpt-4o")["context"] == 128_000
    assert context_window("gpt-4o") == 128_000


@pytest.mark.parametrize("model_id", ["claude-3-7-sonnet-20250219", "claude-sonnet-4-5"])
def test_anchor_claude_sonnet_is_200k_in_data_and_lookup(model_id):
    assert _record("anthropic", model_id)["context"] == 200_000
    assert context_window(model_id) == 200_000


# --- every covered family resolves to its row of the table ------------------------------------

COVERED = [
    # OpenAI: legacy, gpt-4o, gpt-4.1, gpt-5 family, o-series
    ("gpt-3.5-turbo", "openai", "gpt-3.5-turbo"),
    ("gpt-4", "openai", "gpt-4"),
    ("gpt-4-turbo", "openai", "gpt-4-turbo"),
    ("gpt-4o", "openai", "gpt-4o"),
    ("gpt-4o-mini", "openai", "gpt-4o-mini"),
    ("gpt-4.1", "openai", "gpt-4.1"),
    ("gpt-4.1-mini", "openai", "gpt-4.1-mini"),
    ("gpt-4.1-nano", "openai", "gpt-4.1-nano"),
    ("gpt-5", "openai", "gpt-5"),
    ("gpt-5-mini", "openai", "gpt-5-mini"),
    ("gpt-5-nano", "openai", "gpt-5-nano"),
    ("gpt-5.1", "openai", "gpt-5.1"),
    ("gpt-5.2", "openai", "gpt-5.2"),
    ("gpt-5.4", "openai", "gpt-5.4"),
    ("gpt-5.5", "openai", "gpt-5.5"),
    ("gpt-5.6", "openai", "gpt-5.6"),
    ("o1", "openai", "o1"),
    ("o1-mini", "openai", "o1-mini"),
    ("o3", "openai", "o3"),
    ("o3-mini", "openai", "o3-mini"),
    ("o4-mini", "openai", "o4-mini"),
    # Anthropic: 3, 3.5, 3.7, 4, 4.1, 4.5 and newer
    ("claude-3-haiku-20240307", "anthropic", "claude-3-haiku-20240307"),
    ("claude-3-opus-20240229", "anthropic", "claude-3-opus-20240229"),
    ("claude-3-5-haiku-20241022", "anthropic", "claude-3-5-haiku-20241022"),
    ("claude-3-5-sonnet-20241022", "anthropic", "claude-3-5-sonnet-20241022"),
    ("claude-3-7-sonnet-20250219", "anthropic", "claude-3-7-sonnet-20250219"),
    ("claude-sonnet-4-20250514", "anthropic", "claude-sonnet-4-20250514"),
    ("claude-opus-4-1", "anthropic", "claude-opus-4-1"),
    ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
    ("claude-haiku-4-5", "anthropic", "claude-haiku-4-5"),
    ("claude-opus-4-5", "anthropic", "claude-opus-4-5"),
    ("claude-opus-4-6", "anthropic", "claude-opus-4-6"),
    ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
    ("claude-opus-4-7", "anthropic", "claude-opus-4-7"),
    ("claude-opus-5", "anthropic", "claude-opus-5"),
    ("claude-sonnet-5", "anthropic", "claude-sonnet-5"),
    # Google: Gemini 2.0, 2.5, 3.x
    ("gemini-2.0-flash", "google", "gemini-2.0-flash"),
    ("gemini-2.0-flash-lite", "google", "gemini-2.0-flash-lite"),
    ("gemini-2.5-pro", "google", "gemini-2.5-pro"),
    ("gemini-2.5-flash", "google", "gemini-2.5-flash"),
    ("gemini-2.5-flash-lite", "google", "gemini-2.5-flash-lite"),
    ("gemini-3-pro-preview", "google", "gemini-3-pro-preview"),
    ("gemini-3-flash-preview", "google", "gemini-3-flash-preview"),
    ("gemini-3.1-pro-preview", "google", "gemini-3.1-pro-preview"),
    ("gemini-3.5-flash", "google", "gemini-3.5-flash"),
    ("gemini-3.8-flash", "google", "gemini-3.8-flash"),
    # Meta Llama 3.x and 4
    ("llama-3.3-70b-instruct", "llama", "llama-3.3-70b-instruct"),
    ("llama-4-maverick-17b-128e-instruct-fp8", "llama", "llama-4-maverick-17b-128e-instruct-fp8"),
    ("llama-4-scout-17b-16e-instruct-fp8", "llama", "llama-4-scout-17b-16e-instruct-fp8"),
    ("meta-llama/llama-3-70b-instruct", "openrouter", "meta-llama/llama-3-70b-instruct"),
    ("meta-llama/llama-3.1-8b-instruct", "openrouter", "meta-llama/llama-3.1-8b-instruct"),
    ("meta-llama/llama-3.2-3b-instruct", "openrouter", "meta-llama/llama-3.2-3b-instruct"),
    ("meta-llama/llama-4-maverick", "openrouter", "meta-llama/llama-4-maverick"),
    ("llama-3.1-8b-instant", "groq", "llama-3.1-8b-instant"),
    # Mistral
    ("mistral-large-latest", "mistral", "mistral-large-latest"),
    ("mistral-medium-latest", "mistral", "mistral-medium-latest"),
    ("mistral-small-latest", "mistral", "mistral-small-latest"),
    ("codestral-latest", "mistral", "codestral-latest"),
    ("devstral-medium-latest", "mistral", "devstral-medium-latest"),
    ("magistral-medium-latest", "mistral", "magistral-medium-latest"),
    ("ministral-8b-latest", "mistral", "ministral-8b-latest"),
    ("pixtral-large-latest", "mistral", "pixtral-large-latest"),
    ("open-mixtral-8x22b", "mistral", "open-mixtral-8x22b"),
    # Qwen
    ("qwen-max", "alibaba", "qwen-max"),
    ("qwen-plus", "alibaba", "qwen-plus"),
    ("qwen3-max", "alibaba", "qwen3-max"),
    ("qwen3-coder-plus", "alibaba", "qwen3-coder-plus"),
    ("qwen3-235b-a22b", "alibaba", "qwen3-235b-a22b"),
    ("qwen3.5-plus", "alibaba", "qwen3.5-plus"),
    ("qwq-plus", "alibaba", "qwq-plus"),
    ("qwen/qwen3-coder", "openrouter", "qwen/qwen3-coder"),
    # DeepSeek
    ("deepseek-chat", "deepseek", "deepseek-chat"),
    ("deepseek-reasoner", "deepseek", "deepseek-reasoner"),
    ("deepseek-v4-pro", "deepseek", "deepseek-v4-pro"),
    ("deepseek-v4-flash", "deepseek", "deepseek-v4-flash"),
    ("deepseek/deepseek-r1", "openrouter", "deepseek/deepseek-r1"),
]


@pytest.mark.parametrize(("query", "provider", "model_id"), COVERED)
def test_covered_family_resolves_to_its_row(query, provider, model_id):
    record = _record(provider, model_id)
    info = lookup(query)
    assert info is not None
    assert (info.provider, info.id) == (provider, model_id)
    assert info.context_window == record["context"]
    assert info.max_output == record["output"]
    assert info.max_input == record.get("input")
    assert info.family == record.get("family")
    assert info.name == record.get("name")
    assert info.release_date == record.get("release_date")
    assert context_window(query) == record["context"]
    assert max_output_tokens(query) == record["output"]


def test_every_row_of_the_table_resolves():
    for provider, entries in DOC["models"].items():
        for model_id, record in entries.items():
            info = lookup(model_id)
            assert info is not None, model_id
            if provider in FIRST_PARTY:
                assert (info.provider, info.id) == (provider, model_id)
                assert info.context_window == record["context"]


def test_first_party_numbers_win_over_hosts():
    # Meta's own API and OpenRouter both list Llama 3.3 70B; Alibaba and Groq both list Qwen3 32B.
    assert "meta-llama/llama-3.3-70b-instruct" in DOC["models"]["openrouter"]
    assert lookup("meta-llama/Llama-3.3-70B-Instruct") == lookup("llama-3.3-70b-instruct")
    info = lookup("meta-llama/Llama-3.3-70B-Instruct")
    assert info is not None
    assert info.provider == "llama"
    assert "qwen/qwen3-32b" in DOC["models"]["groq"]
    info = lookup("qwen/qwen3-32b")
    assert info is not None
    assert info.provider == "alibaba"


def test_max_input_is_kept_where_the_provider_sets_one():
    record = _record("openai", "gpt-5")
    assert record["input"] < record["context"]
    info = lookup("gpt-5")
    assert info is not None
    assert info.max_input == record["input"]


# --- normalization -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o", "gpt-4o"),
        ("  openai/gpt-4o  ", "gpt-4o"),
        ("openai:gpt-4o-2024-08-06", "gpt-4o"),
        ("anthropic:claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("anthropic/claude-3-7-sonnet-20250219", "claude-3-7-sonnet"),
        ("anthropic/claude-3.7-sonnet:beta", "claude-3-7-sonnet"),
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet"),
        ("claude-opus-4-6@default", "claude-opus-4-6"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
        ("bedrock:anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("google/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("google-gla:gemini-2.5-flash", "gemini-2.5-flash"),
        ("vertex_ai/gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-2.5-pro-preview-05-06", "gemini-2.5-pro"),
        ("gemini-1.5-pro-002", "gemini-1.5-pro"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("o1-2024-12-17", "o1"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b-instruct"),
        ("openrouter/meta-llama/llama-3.3-70b-instruct:free", "llama-3.3-70b-instruct"),
        ("meta.llama3-1-70b-instruct-v1:0", "llama-3.1-70b-instruct"),
        ("llama3-70b-8192", "llama-3-70b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b-instruct"),
        ("qwen/qwen-2.5-coder-32b-instruct", "qwen2.5-coder-32b-instruct"),
        ("qwen3-8b", "qwen3-8b"),
        ("qwen-max-latest", "qwen-max"),
        ("mistral:mistral-large-2411", "mistral-large"),
        ("deepseek/deepseek-chat", "deepseek-chat"),
        ("gpt-4-turbo-preview", "gpt-4-turbo"),
        ("-latest", "-latest"),  # never stripped down to nothing
    ],
)
def test_normalize_model_id(raw, normalized):
    assert normalize_model_id(raw) == normalized


@pytest.mark.parametrize(
    ("query", "provider", "model_id"),
    [
        ("OPENAI/GPT-4O-2024-08-06", "openai", "gpt-4o-2024-08-06"),
        ("gpt-4o-mini-2024-07-18", "openai", "gpt-4o-mini"),
        ("gpt-5-2025-08-07", "openai", "gpt-5"),
        ("o3-mini-high", "openai", "o3-mini"),  # longest known prefix
        ("gpt-4o-search-preview-2025-03-11", "openai", "gpt-4o"),
        ("claude-3-5-sonnet@20240620", "anthropic", "claude-3-5-sonnet-20240620"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "anthropic", "claude-3-5-sonnet-20241022"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "anthropic", "claude-sonnet-4-20250514"),
        ("anthropic/claude-3.7-sonnet:thinking", "anthropic", "claude-3-7-sonnet-20250219"),
        ("claude-3-7-sonnet-latest", "anthropic", "claude-3-7-sonnet-20250219"),
        ("claude-sonnet-4-5-thinking", "anthropic", "claude-sonnet-4-5"),
        ("models/gemini-2.5-pro", "google", "gemini-2.5-pro"),
        ("gemini-2.5-flash-preview-09-2025", "google", "gemini-2.5-flash"),
        ("gemini-3-pro", "google", "gemini-3-pro-preview"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama", "llama-3.3-70b-instruct"),
        ("meta.llama3-1-70b-instruct-v1:0", "openrouter", "meta-llama/llama-3.1-70b-instruct"),
        ("Qwen/Qwen2.5-72B-Instruct", "alibaba", "qwen2-5-72b-instruct"),
        ("deepseek/deepseek-chat", "deepseek", "deepseek-chat"),
    ],
)
def test_variants_resolve(query, provider, model_id):
    info = lookup(query)
    assert info is not None
    assert (info.provider, info.id) == (provider, model_id)
    assert context_window(query) == _record(provider, model_id)["context"]


def test_unlisted_release_gets_the_smallest_window_of_its_family():
    family = [
        record["context"]
        for model_id, record in DOC["models"]["mistral"].items()
        if normalize_model_id(model_id) == "mistral-large"
    ]
    assert len(set(family)) > 1  # the table has releases with different windows
    assert "mistral-large-2407" not in DOC["models"]["mistral"]
    assert context_window("mistral-large-2407") == min(family)


def test_family_rule_on_a_synthetic_table():
    table = models._parse_table(
        {
            "schema": 1,
            "priority": ["first", "host", "absent"],
            "models": {
                "first": {"fam-2025-01-01": {"context": 100, "output": None}},
                "host": {
                    "fam-2024-01-01": {"context": 50, "output": 10},
                    "fam-2026-01-01": {"context": 70, "output": 10},
                },
            },
        }
    )
    assert table.normalized["fam"].provider == "first"  # priority across providers
    assert table.normalized["fam"].max_output is None
    assert set(table.exact) == {"fam-2025-01-01", "fam-2024-01-01", "fam-2026-01-01"}


# --- unknown models, overrides, bad input ------------------------------------------------------


def test_unknown_model_gets_default_and_one_warning(caplog):
    caplog.set_level(logging.WARNING, logger="synopsis.models")
    assert lookup("zz-unknown-model-1") is None
    assert max_output_tokens("zz-unknown-model-1") is None
    spellings = ("zz-unknown-model-1", "ZZ-Unknown-Model-1", "acme/zz-unknown-model-1:free")
    with pytest.warns(UnknownModelWarning) as warned:
        windows = [context_window(spelling) for spelling in spellings]
    assert windows == [DEFAULT_CONTEXT_WINDOW] * 3
    assert DEFAULT_CONTEXT_WINDOW == 200_000
    # Shown by Python whatever the application did with logging, and logged too; once.
    (shown,) = warned
    records = [r for r in caplog.records if r.name == "synopsis.models"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].getMessage() == str(shown.message)
    assert "'zz-unknown-model-1'" in str(shown.message)
    assert "200,000 tokens" in str(shown.message)
    assert "context_window=" in str(shown.message)


def test_each_unknown_model_warns_once(caplog):
    caplog.set_level(logging.WARNING, logger="synopsis.models")
    with pytest.warns(UnknownModelWarning) as warned:
        [context_window(m) for _ in range(3) for m in ("zz-unknown-a", "zz-unknown-b")]
    assert len([r for r in caplog.records if r.name == "synopsis.models"]) == 2
    assert len(warned) == 2


def test_a_compactor_for_an_unknown_model_says_so_where_a_user_sees_it() -> None:
    # Without any logging set up: the warning, then each compaction's event names it.
    with pytest.warns(UnknownModelWarning, match="'zz-local-8k'"):
        compactor = synopsis.Compactor(model="zz-local-8k", environ={})
    assert compactor.setup.window == DEFAULT_CONTEXT_WINDOW
    history = [{"role": "user", "content": f"request {i} " + "word " * 400} for i in range(40)]
    result = compactor.compact(history, force=True)
    (done,) = [e for e in result.events if isinstance(e, synopsis.CompactionCompleted)]
    assert "'zz-local-8k'" in done.window_assumed
    assert "200,000" in done.window_assumed
    given = synopsis.Compactor(model="zz-local-8k", context_window=8000, environ={})
    assert given.setup.window_assumed == ""
    # No model at all: gpt-4o's table entry, documented, nothing assumed.
    bare = synopsis.Compactor(environ={})
    assert (bare.setup.window, bare.setup.window_assumed) == (context_window("gpt-4o"), "")


def test_known_model_does_not_warn(caplog):
    caplog.set_level(logging.WARNING, logger="synopsis.models")
    context_window("gpt-4o")
    assert not caplog.records


@pytest.mark.parametrize("model", ["gpt-4o", "zz-unknown-model-2", ""])
def test_override_wins(model, caplog):
    caplog.set_level(logging.WARNING, logger="synopsis.models")
    assert context_window(model, override=12_345) == 12_345
    assert not caplog.records


@pytest.mark.parametrize("override", [0, -1, True, False, 1.5, "100000", 100_000.0])
def test_bad_override_raises(override):
    with pytest.raises(ConfigurationError, match=r"^override must be a positive .*\.$"):
        context_window("gpt-4o", override=override)


@pytest.mark.parametrize("model", ["", "   ", None, 42])
def test_bad_model_raises(model):
    for function in (lookup, normalize_model_id, context_window, max_output_tokens):
        with pytest.raises(ConfigurationError, match=r"^model must be a non-empty string"):
            function(model)


def test_model_info_is_frozen():
    info = lookup("gpt-4o")
    assert isinstance(info, ModelInfo)
    with pytest.raises(AttributeError):
        info.context_window = 1  # type: ignore[misc]


# --- loading -----------------------------------------------------------------------------------


@pytest.fixture
def _reload():
    models._table.cache_clear()
    models._resolve.cache_clear()
    yield
    models._table.cache_clear()
    models._resolve.cache_clear()


@pytest.mark.usefixtures("_reload")
def test_table_is_loaded_lazily_once_and_lookups_are_cached():
    assert models._table.cache_info().currsize == 0
    lookup("gpt-4o")
    lookup("claude-sonnet-4-5")
    context_window("gpt-4o")
    assert models._table.cache_info().misses == 1
    assert models._resolve.cache_info().hits >= 1


@pytest.mark.usefixtures("_reload")
def test_missing_table_raises(monkeypatch):
    monkeypatch.setattr(models, "_DATA_FILE", "no-such-table.json")
    with pytest.raises(SynopsisError, match="cannot be read"):
        lookup("gpt-4o")


def test_committed_table_has_the_loader_shape():
    assert DOC["schema"] == 1
    assert DOC["license"] == "MIT"
    assert "models.dev" in DOC["source"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", DOC["generated"])
    assert DOC["priority"][:2] == ["openai", "anthropic"]
    assert set(DOC["models"]) == set(DOC["priority"])
    for entries in DOC["models"].values():
        assert entries
        for record in entries.values():
            assert set(record) <= RECORD_KEYS
            assert isinstance(record["context"], int)
            assert record["context"] > 0
            assert record["output"] is None or record["output"] > 0
    table = models._parse_table(DOC)
    assert len(table.exact) > 200


def test_committed_table_is_in_generator_form(gen):
    assert gen.render(DOC) == _data_text()


def _good_doc() -> dict[str, Any]:
    return {"schema": 1, "priority": ["p"], "models": {"p": {"m": {"context": 10, "output": 5}}}}


def _mutated(path: tuple[str, ...], value: object) -> dict[str, Any]:
    doc = _good_doc()
    target: dict[str, Any] = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "top level"),
        (_mutated(("schema",), 2), "schema"),
        (_mutated(("priority",), "p"), "priority"),
        (_mutated(("priority",), [1]), "priority"),
        (_mutated(("models",), []), "models is not"),
        (_mutated(("priority",), []), "missing from priority"),
        (_mutated(("models", "p"), []), "models of 'p'"),
        (_mutated(("models", "p", "m"), 10), "p/m is not an object"),
        (_mutated(("models", "p", "m"), {"output": 5}), "has no context"),
        (_mutated(("models", "p", "m", "context"), True), "context is True"),
        (_mutated(("models", "p", "m", "output"), -5), "output is -5"),
        (_mutated(("models", "p", "m", "family"), 3), "family is 3"),
    ],
)
def test_malformed_table_is_refused(document, reason):
    with pytest.raises(SynopsisError, match=re.escape(reason)):
        models._parse_table(document)


def test_good_synthetic_table_parses():
    doc = _mutated(("models", "p", "m", "name"), "M")
    assert models._parse_table(doc).exact["m"] == ModelInfo("m", "p", 10, 5, name="M")


# --- the generator -----------------------------------------------------------------------------

FIXTURE_FILES = {
    "providers/openai/models/gpt-test.toml": """
name = "GPT Test"
family = "gpt"
release_date = "2026-01-01"

[limit]
context = 128_000
input = 100_000
output = 16_384

[modalities]
input = ["text", "image"]
output = ["text"]
""",
    "providers/anthropic/models/claude-test.toml": """
base_model = "anthropic/claude-test"
name = "Claude Test (API)"

[limit]
output = 32_000
""",
    "models/anthropic/claude-test.toml": """
name = "Claude Test"
family = "claude-test"
release_date = "2026-02-03"

[limit]
context = 200_000
output = 64_000

[modalities]
input = ["text"]
output = ["text"]
""",
}

FIXTURE_EXPECTED = {
    "_comment": (
        "Generated by scripts/gen_models.py from models.dev data; do not edit by hand. "
        "See MODELS.md beside this file."
    ),
    "source": "models.dev (https://models.dev), repository sst/models.dev, by SST",
    "license": "MIT",
    "generated": "2026-01-02",
    "inputs": ["providers"],
    "schema": 1,
    "priority": ["openai", "anthropic"],
    "models": {
        "anthropic": {
            "claude-test": {
                "context": 200_000,
                "output": 32_000,
                "family": "claude-test",
                "name": "Claude Test (API)",
                "release_date": "2026-02-03",
            }
        },
        "openai": {
            "gpt-test": {
                "context": 128_000,
                "input": 100_000,
                "output": 16_384,
                "family": "gpt",
                "name": "GPT Test",
                "release_date": "2026-01-01",
            }
        },
    },
}


def _write_fixture(root: Path) -> Path:
    for relative, text in FIXTURE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip(), encoding="utf-8")
    return root / "providers"


def test_generator_on_fixture_tree(gen, tmp_path):
    providers = _write_fixture(tmp_path / "models.dev")
    out = tmp_path / "out" / "models.json"
    assert gen.main([str(providers), "-o", str(out), "--date", "2026-01-02"]) == 0
    text = out.read_text(encoding="utf-8")
    assert json.loads(text) == FIXTURE_EXPECTED
    assert text == gen.render(FIXTURE_EXPECTED)
    # The output is what the loader expects.
    table = models._parse_table(json.loads(text))
    assert table.exact["claude-test"].context_window == 200_000
    # Same inputs, same bytes; the checkout root works as well as its providers/ directory.
    again = tmp_path / "again.json"
    gen.main([str(providers.parent), "-o", str(again), "--date", "2026-01-02"])
    assert json.loads(again.read_text(encoding="utf-8"))["models"] == FIXTURE_EXPECTED["models"]


def test_generator_runs_as_a_script(tmp_path):
    providers = _write_fixture(tmp_path / "src")
    out = tmp_path / "models.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(providers), "-o", str(out), "--date", "2026-01-02"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote 2 models from 2 providers" in result.stdout
    assert json.loads(out.read_text(encoding="utf-8")) == FIXTURE_EXPECTED


def test_generator_reads_api_json_filters_and_layers(gen, tmp_path, capsys):
    api = {
        "openai": {
            "models": {
                "gpt-test": {"limit": {"context": 1000, "output": 100}, "name": "Old"},
                "text-embedding-3-small": {"limit": {"context": 8191, "output": 1536}},
                "gpt-image-1": {
                    "limit": {"context": 1000, "output": 0},
                    "modalities": {"input": ["text"], "output": ["image"]},
                },
                "gpt-nolimit": {"name": "No limit"},
                "dall-e-3": {"limit": {"context": 1000, "output": 0}},
            }
        },
        "xai": {"models": {"grok-4": {"limit": {"context": 256_000, "output": 64_000}}}},
    }
    snapshot = tmp_path / "api.json.gz"
    snapshot.write_bytes(gzip.compress(json.dumps(api).encode()))
    providers = _write_fixture(tmp_path / "tree")
    out = tmp_path / "models.json"
    gen.main([str(snapshot), str(providers), "-o", str(out), "--date", "2026-01-02"])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["inputs"] == ["api.json.gz", "providers"]
    assert sorted(doc["models"]["openai"]) == ["gpt-test"]  # the tree's gpt-test wins
    assert doc["models"]["openai"]["gpt-test"]["name"] == "GPT Test"
    assert "xai" not in doc["models"]
    assert "skipped openai/gpt-nolimit" in capsys.readouterr().err
    plain = tmp_path / "api.json"
    plain.write_text(json.dumps(api), encoding="utf-8")
    gen.main([str(plain), "-o", str(out), "--date", "2026-01-02"])
    only = json.loads(out.read_text(encoding="utf-8"))["models"]
    assert only == {"openai": {"gpt-test": {"context": 1000, "output": 100, "name": "Old"}}}


def test_generator_refuses_a_missing_source(gen, tmp_path):
    with pytest.raises(SystemExit) as excinfo:
        gen.main([str(tmp_path / "nowhere"), "-o", str(tmp_path / "x.json")])
    assert excinfo.value.code == 2
