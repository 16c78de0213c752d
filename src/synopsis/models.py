"""Context windows and output limits of known models.

The numbers come from ``synopsis/data/models.json``, a small table generated from models.dev
(MIT licence, by SST) by ``scripts/gen_models.py``; ``data/MODELS.md`` says how to regenerate it.
The table is read once, on the first lookup, and lookups are cached.

A model id is matched case-insensitively after provider prefixes are dropped (``openai/gpt-4o``,
``anthropic:claude-3-5-haiku-latest``, ``models/gemini-2.5-pro``,
``us.anthropic.claude-sonnet-4-20250514-v1:0``, ``meta-llama/Llama-3.3-70B-Instruct``). When the
exact id is not known, version suffixes come off one at a time (``-20250219``, ``-2024-08-06``,
``@20240620``, ``-latest``, ``-preview``, ``-001``, ``:free``, ``-v1:0`` ...) until a known id
matches. Failing that, the fully stripped id is compared with the stripped ids of the table (where
several releases of one provider share it, the one with the smallest window is used, so a guess
for an unlisted release does not overshoot), and last the longest known prefix that ends at a
``-``, ``_``, ``:``, ``@`` or ``/`` is taken, so ``o3-mini-high`` resolves to ``o3-mini``. A model
that still matches nothing gets :data:`DEFAULT_CONTEXT_WINDOW` tokens and one warning on the
``synopsis.models`` logger.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import warnings
from dataclasses import dataclass
from importlib import resources

from synopsis.errors import ConfigurationError, SynopsisError, UnknownModelWarning

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "ModelInfo",
    "assumed_window",
    "context_window",
    "lookup",
    "max_output_tokens",
    "normalize_model_id",
]

logger = logging.getLogger("synopsis.models")

DEFAULT_CONTEXT_WINDOW = 200_000
"""Tokens assumed for a model the bundled table does not know."""

_SCHEMA = 1
_DATA_FILE = "models.json"

# "provider:" prefixes as pydantic-ai, LiteLLM and others write them.
_COLON_PREFIX = re.compile(
    r"^(?:(?:openai|anthropic|google|google-gla|google-vertex|gemini|vertex|vertex_ai|vertexai"
    r"|bedrock|azure|azure_ai|groq|mistral|mistralai|deepseek|openrouter|together|together_ai"
    r"|togetherai|fireworks|fireworks_ai|ollama|meta|meta-llama|qwen|alibaba|dashscope"
    r"|huggingface|litellm|cerebras|cohere|xai):)+"
)
# Amazon Bedrock ids: an optional region group, then the maker ("anthropic.claude-...").
_BEDROCK_PREFIX = re.compile(
    r"^(?:(?:us|eu|apac|ap|global|us-gov|jp|au|ca)\.)?"
    r"(?:anthropic|meta|mistral|amazon|cohere|ai21|deepseek|qwen|openai|google|writer)\."
)
# Version suffixes, tried in this order; one comes off per step.
_SUFFIXES = tuple(
    re.compile(pattern)
    for pattern in (
        r"@.*$",  # Vertex AI: claude-3-5-sonnet@20240620
        r"-v\d+:\d+$",  # Bedrock: ...-v1:0
        r":[^:]*$",  # OpenRouter and Ollama tags: :free, :beta, :thinking, :70b
        r"-latest$",
        r"-preview$",
        r"-\d{4}-\d{2}-\d{2}$",  # gpt-4o-2024-08-06
        r"-\d{8}$",  # claude-3-7-sonnet-20250219
        r"-\d{2}-\d{4}$",  # gemini-2.5-flash-preview-09-2025
        r"-\d{2}-\d{2}$",  # gemini-2.5-pro-preview-05-06
        r"-\d{3,4}$",  # gemini-1.5-pro-001, gpt-4-0613, mistral-large-2411
    )
)
_BOUNDARY = re.compile(r"[-_:@/ ]")
_CLAUDE_DOT = re.compile(r"(?<=\d)\.(?=\d)")  # claude-3.5-sonnet -> claude-3-5-sonnet
_LLAMA_DIGIT = re.compile(r"^llama(?=\d)")  # llama3-70b -> llama-3-70b
_LLAMA_MINOR = re.compile(r"^llama-(\d)-(\d)(?=\D|$)")  # llama-3-1-8b -> llama-3.1-8b
_QWEN_VERSION = re.compile(r"^qwen-?(\d)[.-](\d)(?=-|$)")  # qwen-2.5-7b, qwen2-5-7b -> qwen2.5-7b
_VERTEX_DATE = re.compile(r"@(\d{8})$")  # claude-3-5-sonnet@20240620 -> ...-20240620


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the bundled table knows of one model.

    ``id`` and ``provider`` are as models.dev spells them (``provider`` is the models.dev
    provider the numbers were taken from: a model's own maker where it has an API, else a host).
    ``max_input`` is set where a provider caps the prompt below ``context_window`` minus
    ``max_output``.
    """

    id: str
    provider: str
    context_window: int
    max_output: int | None
    max_input: int | None = None
    family: str | None = None
    name: str | None = None
    release_date: str | None = None


@dataclass(frozen=True, slots=True)
class _Table:
    exact: dict[str, ModelInfo]
    normalized: dict[str, ModelInfo]


def _strip_prefixes(model: str) -> str:
    key = _COLON_PREFIX.sub("", model.strip().lower())
    key = _COLON_PREFIX.sub("", key.rsplit("/", 1)[-1])
    key = _BEDROCK_PREFIX.sub("", key)
    if key.startswith("claude"):
        key = _CLAUDE_DOT.sub("-", key)
    key = _LLAMA_DIGIT.sub("llama-", key)
    key = _LLAMA_MINOR.sub(r"llama-\1.\2", key)
    key = _QWEN_VERSION.sub(r"qwen\1.\2", key)
    return _VERTEX_DATE.sub(r"-\1", key)


def _strip_one_suffix(key: str) -> str:
    for pattern in _SUFFIXES:
        stripped = pattern.sub("", key)
        if stripped and stripped != key:
            return stripped
    return key


def _candidates(model: str) -> list[str]:
    """The prefix-free id, then each shorter form as suffixes come off (last: fully normalized)."""
    stages = [_strip_prefixes(model)]
    while (shorter := _strip_one_suffix(stages[-1])) != stages[-1]:
        stages.append(shorter)
    return stages


def _check_model(model: object) -> str:
    if not isinstance(model, str) or not model.strip():
        raise ConfigurationError(
            f"model must be a non-empty string such as 'gpt-4o', got {model!r}."
        )
    return model


def normalize_model_id(model: str) -> str:
    """``model`` lower-cased, without provider prefix or version suffixes.

    ``normalize_model_id("openai/GPT-4o-2024-08-06") == "gpt-4o"``.
    """
    return _candidates(_check_model(model))[-1]


# --- the bundled table -------------------------------------------------------------------------


def _malformed(reason: str) -> SynopsisError:
    return SynopsisError(f"The bundled model table {_DATA_FILE} is malformed: {reason}.")


def _optional_int(record: dict[str, object], key: str, where: str) -> int | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _malformed(f"{where}: {key} is {value!r}, not a positive integer")
    return value


def _optional_str(record: dict[str, object], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _malformed(f"{where}: {key} is {value!r}, not a string")


def _model_info(provider: str, model_id: str, record: object) -> ModelInfo:
    where = f"{provider}/{model_id}"
    if not isinstance(record, dict):
        raise _malformed(f"{where} is not an object")
    context = _optional_int(record, "context", where)
    if context is None:
        raise _malformed(f"{where} has no context")
    return ModelInfo(
        id=model_id,
        provider=provider,
        context_window=context,
        max_output=_optional_int(record, "output", where),
        max_input=_optional_int(record, "input", where),
        family=_optional_str(record, "family", where),
        name=_optional_str(record, "name", where),
        release_date=_optional_str(record, "release_date", where),
    )


def _parse_table(document: object) -> _Table:
    """Check the shape of a loaded ``models.json`` and index it for lookups."""
    if not isinstance(document, dict):
        raise _malformed("the top level is not an object")
    if document.get("schema") != _SCHEMA:
        raise _malformed(f"schema is {document.get('schema')!r}, not {_SCHEMA}")
    priority = document.get("priority")
    models = document.get("models")
    if not isinstance(priority, list) or not all(isinstance(p, str) for p in priority):
        raise _malformed("priority is not a list of provider names")
    if not isinstance(models, dict):
        raise _malformed("models is not an object")
    for provider in models:
        if provider not in priority:
            raise _malformed(f"provider {provider!r} is missing from priority")
    exact: dict[str, ModelInfo] = {}
    normalized: dict[str, ModelInfo] = {}
    for provider in priority:
        entries = models.get(provider, {})
        if not isinstance(entries, dict):
            raise _malformed(f"models of {provider!r} is not an object")
        # Newest first within a provider (dated ids sort by date): on equal windows a bare family
        # name like "claude-3-5-sonnet" resolves to its latest dated release.
        for model_id in sorted(entries, reverse=True):
            info = _model_info(provider, model_id, entries[model_id])
            stages = _candidates(model_id)
            exact.setdefault(stages[0], info)
            # A family name shared by several releases of one provider resolves to the one with
            # the smallest window, so that a guess for an unlisted release never overshoots.
            known = normalized.get(stages[-1])
            if known is None or (
                known.provider == provider and info.context_window < known.context_window
            ):
                normalized[stages[-1]] = info
    return _Table(exact=exact, normalized=normalized)


@functools.cache
def _table() -> _Table:
    resource = resources.files("synopsis") / "data" / _DATA_FILE
    try:
        document = json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SynopsisError(f"The bundled model table {_DATA_FILE} cannot be read: {exc}") from exc
    return _parse_table(document)


# --- lookups -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _resolve(model: str) -> ModelInfo | None:
    table = _table()
    stages = _candidates(model)
    for key in stages:
        if key in table.exact:
            return table.exact[key]
    key = stages[-1]
    if key in table.normalized:
        return table.normalized[key]
    for boundary in reversed(list(_BOUNDARY.finditer(key))):
        prefix = key[: boundary.start()]
        info = table.exact.get(prefix) or table.normalized.get(prefix)
        if info is not None:
            return info
    return None


def lookup(model: str) -> ModelInfo | None:
    """What the bundled table knows of ``model``, or ``None`` when nothing matches."""
    return _resolve(_check_model(model))


_warned: set[str] = set()
_warned_lock = threading.Lock()


def context_window(model: str, *, override: int | None = None, hint: str | None = None) -> int:
    """Tokens that fit in ``model``'s context window (prompt and completion together).

    An ``override`` always wins. An unknown model gets :data:`DEFAULT_CONTEXT_WINDOW`, once
    per normalized model id, an :class:`~synopsis.errors.UnknownModelWarning` (shown by Python
    whether or not logging is set up) and a warning on the ``synopsis.models`` logger; ``hint``
    says how the caller's user gives the real window (else: ``context_window=``, ``--window``).
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override <= 0:
            raise ConfigurationError(
                f"override must be a positive whole number of tokens, got {override!r}."
            )
        return override
    info = lookup(model)
    if info is not None:
        return info.context_window
    key = normalize_model_id(model)
    with _warned_lock:
        first = key not in _warned
        _warned.add(key)
    if first:
        said = assumed_window(model, hint)
        logger.warning("%s", said)
        # Shown by Python whether or not the application set up logging: an 8k local model
        # sized as 200k overflows on every request until the server refuses it.
        warnings.warn(UnknownModelWarning(said), stacklevel=2)
    return DEFAULT_CONTEXT_WINDOW


_GIVE_WINDOW = "context_window= in Python, --window or --model-window on the command line"


def assumed_window(model: str, hint: str | None = None) -> str:
    """What synopsis says of ``model`` when the table does not know it: the window it
    assumed, and how to give the real one (``hint``, else the usual options)."""
    return (
        f"unknown model {model!r}: synopsis assumes a context window of "
        f"{DEFAULT_CONTEXT_WINDOW:,} tokens; give the real one ({hint or _GIVE_WINDOW})"
    )


def max_output_tokens(model: str) -> int | None:
    """Most tokens ``model`` may generate in one response, or ``None`` when unknown."""
    info = lookup(model)
    return None if info is None else info.max_output
