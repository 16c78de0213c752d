"""Model names map to the right encoding, framing and factor."""

from __future__ import annotations

import pytest

from synopsis.tokens import (
    CLAUDE_FACTOR,
    CLAUDE_NEW_TOKENIZER_FACTOR,
    FAMILIES,
    GEMINI_FACTOR,
    OPEN_WEIGHTS_FACTOR,
    family_for_model,
)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        (None, "openai-o200k"),
        ("gpt-4o", "openai-o200k"),
        ("gpt-4o-mini-2024-07-18", "openai-o200k"),
        ("chatgpt-4o-latest", "openai-o200k"),
        ("gpt-4.1-nano", "openai-o200k"),
        ("gpt-4.5-preview", "openai-o200k"),
        ("gpt-5", "openai-o200k"),
        ("gpt-5.1-codex", "openai-o200k"),
        ("o1", "openai-o200k"),
        ("o3-mini", "openai-o200k"),
        ("o4-mini-2025-04-16", "openai-o200k"),
        ("gpt-oss-120b", "openai-o200k"),
        ("openai/gpt-4o", "openai-o200k"),
        ("ft:gpt-4o-mini:acme::abc123", "openai-o200k"),
        ("gpt-4", "openai-cl100k"),
        ("gpt-4-turbo-2024-04-09", "openai-cl100k"),
        ("gpt-4-0613", "openai-cl100k"),
        ("gpt-3.5-turbo", "openai-cl100k"),
        ("gpt-35-turbo", "openai-cl100k"),
        ("text-embedding-3-small", "openai-cl100k"),
        ("claude-3-5-sonnet-20241022", "claude"),
        ("claude-3-opus-20240229", "claude"),
        ("claude-sonnet-4-20250514", "claude"),
        ("claude-opus-4-1-20250805", "claude"),
        ("claude-sonnet-4-5", "claude"),
        ("claude-haiku-4-5@20251001", "claude"),
        ("claude-opus-4-6", "claude"),
        ("us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude"),
        ("anthropic/claude-sonnet-4.5", "claude"),
        ("claude-2.1", "claude"),
        ("claude-opus-4-7", "claude-new-tokenizer"),
        ("anthropic/claude-opus-4.7", "claude-new-tokenizer"),
        ("claude-opus-5", "claude-new-tokenizer"),
        ("claude-sonnet-5-20260101", "claude-new-tokenizer"),
        ("claude", "claude-new-tokenizer"),
        ("Claude-Latest", "claude-new-tokenizer"),
        ("gemini-2.5-pro", "gemini"),
        ("models/gemini-2.0-flash", "gemini"),
        ("google/gemini-3-pro-preview", "gemini"),
        ("gemma-3-27b-it", "gemini"),
        ("meta-llama/Llama-3.3-70B-Instruct", "open-weights"),
        ("mistral-large-latest", "open-weights"),
        ("qwen2.5-coder-32b", "open-weights"),
        ("deepseek-chat", "open-weights"),
        ("my-azure-deployment", "open-weights"),
        ("", "open-weights"),
    ],
)
def test_family_for_model(model: str | None, family: str) -> None:
    assert family_for_model(model).name == family


def test_family_table() -> None:
    assert FAMILIES["claude"].factor == CLAUDE_FACTOR == 1.18
    assert FAMILIES["claude-new-tokenizer"].factor == CLAUDE_NEW_TOKENIZER_FACTOR == 1.53
    assert FAMILIES["gemini"].factor == GEMINI_FACTOR == 1.08
    assert FAMILIES["open-weights"].factor == OPEN_WEIGHTS_FACTOR == 1.10
    assert FAMILIES["claude"].provider == "anthropic"
    assert FAMILIES["gemini"].provider == "gemini"
    for family in FAMILIES.values():
        assert family.factor >= 1.0
        assert family.encoding in ("o200k_base", "cl100k_base")
