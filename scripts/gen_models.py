#!/usr/bin/env python3
"""Regenerate ``src/synopsis/data/models.json`` from models.dev data.

models.dev (https://models.dev, repository ``sst/models.dev``, MIT licence, by SST) keeps one
TOML file per model at ``providers/<provider>/models/<model id>.toml``; the context window and
the output limit are in its ``[limit]`` table. A provider file may name a shared definition with
``base_model = "<maker>/<model>"``, which lives at ``models/<maker>/<model>.toml`` beside
``providers/``; the provider file's own keys win over the shared ones.

Usage::

    python scripts/gen_models.py SRC [SRC ...] -o src/synopsis/data/models.json

Each SRC is either a directory (a checkout of models.dev, its ``providers/`` tree, or a partial
copy of either) or the compiled ``api.json`` that models.dev publishes (``.json`` or
``.json.gz``), which has the same records keyed by provider and model id. When two sources hold
the same provider and model id, the later one on the command line wins. Only the providers and
model families synopsis covers are kept (see ``COVERAGE``); the output is sorted and stable, so
the same inputs and ``--date`` always give the same bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

SCHEMA = 1

# Providers to keep, highest priority first (synopsis resolves a model id that several providers
# list to the first of them here, so first-party APIs come before hosts), each with the pattern a
# model id must start with (case-insensitive) to be kept.
COVERAGE: dict[str, str] = {
    "openai": r"gpt-|o\d|chatgpt-",
    "anthropic": r"claude-",
    "google": r"gemini-|gemma-",
    "mistral": r"",
    "deepseek": r"deepseek-",
    "llama": r"llama-",
    "alibaba": r"qwen|qwq|qvq",
    "groq": r"llama|meta-llama/llama|qwen",
    "togetherai": r"meta-llama/llama|qwen/",
    "openrouter": r"meta-llama/llama|qwen/|deepseek/deepseek",
}

# Ids of models that are not chat models (embeddings, speech, images, moderation, ...).
EXCLUDE = re.compile(
    r"embed|tts|whisper|transcri|moderation|ocr|realtime|audio|asr|livetranslate|guard|image"
    r"|search|deep-research|computer-use|-live|voxtral|lyria|veo|imagen",
    re.IGNORECASE,
)

Record = dict[str, Any]
Table = dict[str, dict[str, Record]]


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            merged[key] = _deep_merge(old, value)
        else:
            merged[key] = value
    return merged


def _positive_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _record(provider: str, model_id: str, raw: dict[str, Any]) -> Record | None:
    """The slim record synopsis bundles, or None when the model is out of scope or has no limit."""
    if not re.match(COVERAGE[provider], model_id, re.IGNORECASE) or EXCLUDE.search(model_id):
        return None
    modalities = raw.get("modalities")
    if isinstance(modalities, dict) and not (
        "text" in modalities.get("input", ["text"]) and "text" in modalities.get("output", ["text"])
    ):
        return None
    limit = raw.get("limit")
    if not isinstance(limit, dict):
        limit = {}
    context = _positive_int(limit.get("context"))
    if context is None:
        print(f"skipped {provider}/{model_id}: no [limit] context", file=sys.stderr)
        return None
    record: Record = {"context": context, "output": _positive_int(limit.get("output"))}
    max_input = _positive_int(limit.get("input"))
    if max_input is not None:
        record["input"] = max_input
    for key in ("family", "name", "release_date"):
        value = raw.get(key)
        if isinstance(value, str) and value:
            record[key] = value
    return record


def _read_api_json(path: Path) -> Table:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    doc = json.loads(data)
    table: Table = {}
    for provider in COVERAGE:
        models = doc.get(provider, {}).get("models", {})
        for model_id, raw in models.items():
            record = _record(provider, model_id, raw)
            if record is not None:
                table.setdefault(provider, {})[model_id] = record
    return table


def _read_toml_tree(path: Path) -> Table:
    root = path if (path / "providers").is_dir() else path.parent
    providers = root / "providers"
    table: Table = {}
    for provider in COVERAGE:
        models_dir = providers / provider / "models"
        for file in sorted(models_dir.rglob("*.toml")):
            model_id = file.relative_to(models_dir).with_suffix("").as_posix()
            raw = tomllib.loads(file.read_text(encoding="utf-8"))
            base_name = raw.get("base_model")
            if isinstance(base_name, str):
                base_file = root / "models" / f"{base_name}.toml"
                if base_file.is_file():
                    base = tomllib.loads(base_file.read_text(encoding="utf-8"))
                    raw = _deep_merge(base, raw)
            record = _record(provider, model_id, raw)
            if record is not None:
                table.setdefault(provider, {})[model_id] = record
    return table


def build(sources: list[Path], generated: str) -> dict[str, Any]:
    """The whole document for ``models.json`` from ``sources`` (later ones win)."""
    table: Table = {}
    for source in sources:
        part = _read_toml_tree(source) if source.is_dir() else _read_api_json(source)
        for provider, models in part.items():
            table.setdefault(provider, {}).update(models)
    return {
        "_comment": (
            "Generated by scripts/gen_models.py from models.dev data; do not edit by hand. "
            "See MODELS.md beside this file."
        ),
        "source": "models.dev (https://models.dev), repository sst/models.dev, by SST",
        "license": "MIT",
        "generated": generated,
        "inputs": [source.name for source in sources],
        "schema": SCHEMA,
        "priority": [provider for provider in COVERAGE if provider in table],
        "models": {provider: dict(sorted(table[provider].items())) for provider in sorted(table)},
    }


def render(document: dict[str, Any]) -> str:
    """Stable JSON text: sorted keys, one-space indent, ASCII only, final newline."""
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "sources",
        nargs="+",
        type=Path,
        metavar="SRC",
        help="a models.dev checkout or providers/ tree, or an api.json(.gz)",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    parser.add_argument(
        "--date",
        default=dt.datetime.now(dt.UTC).date().isoformat(),
        help="generation date written in the header (default: today, UTC)",
    )
    args = parser.parse_args(argv)
    for source in args.sources:
        if not source.exists():
            parser.error(f"{source} does not exist")
    document = build(list(args.sources), args.date)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(document), encoding="utf-8")
    count = sum(len(models) for models in document["models"].values())
    print(f"wrote {count} models from {len(document['priority'])} providers to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
