"""Provider profiles: which of the provider rules (docs/message-rules.md) a target enforces.

A profile is a plain frozen value; ``dataclasses.replace(ANTHROPIC, mid_system=True)`` makes a
variant (Claude Opus 4.8 and later accept a system message right after a user turn). Rules
marked *conservative* (enforced once, or by some hosts) are switched on by default and reported
with ``conservative=True`` so callers can tell them apart. Rules that only some models enforce
(R4, G4) or that depend on the request (R5 ``store``, A6/A7 ``thinking``) are off, or
permissive, by default: the history alone does not say which model it goes to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from synopsis.errors import ConfigurationError

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "OPENAI",
    "OPENAI_STRICT",
    "PROFILES",
    "RESPONSES",
    "Profile",
    "ProviderName",
    "get_profile",
]

ProviderName = Literal["openai", "openai-strict", "responses", "anthropic", "gemini"]


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    family: Literal["openai", "responses", "anthropic", "gemini"]
    results_adjacent: bool = True
    """Results must sit in the block right after their call (C1/C2, A1/A2, G2)."""
    result_block: Literal["tool_run", "merged_user", "single"] = "tool_run"
    """How the block after a call is formed: a run of tool messages (OpenAI); every following
    user-side message, which the API merges into one turn (Anthropic); one turn (Gemini)."""
    system: Literal["anywhere", "leading", "first_only"] = "anywhere"
    mid_system: bool = False
    """Allow a system message right after a user turn (Claude Opus 4.8 and later). Without it
    an Anthropic system message belongs in the top-level ``system``."""
    developer_role: bool = True
    alternation: bool = False
    merge_same_role: bool = False
    """Repair merges same-role neighbours (strict alternation; Gemini's call-turn rule)."""
    first_user: bool = False
    """The first message after the system prompt is a user message (A5, G5: conservative)."""
    last_user: bool = False
    """The history ends with a user turn or a function response (G5: conservative)."""
    nonempty: bool = False
    """Every message has content, and no text part is empty (A4; Gemini's "empty text
    parameter")."""
    blank_is_empty: bool = False
    """Text of whitespace alone counts as empty: Anthropic rejects it ("text content blocks
    must contain non-whitespace text"); Gemini rejects only the empty string, and a single
    space is what clients send in its place."""
    allow_empty_final_assistant: bool = True
    results_first: bool = False
    thinking_rules: bool = False
    thinking: bool | None = None
    """Whether the request enables extended thinking (A6/A7); ``None`` when unknown."""
    reasoning_followed: bool = False
    """A reasoning item is followed by the item it produced (R3), keeps ``summary`` (R6)."""
    reasoning_required: bool = False
    """An output message is not sent without its reasoning item (R4, newer reasoning models)."""
    store: bool = True
    """The request's ``store``; with ``False`` items are replayed in full, never referenced (R5)."""
    thought_signatures: bool = False
    """Calls of the current turn carry their thought signature (G4, Gemini 3)."""
    call_after_user: bool = False
    empty_tool_calls: bool = False
    result_style: Literal["tool", "user"] = "tool"
    """Where a synthetic result goes on repair: a tool message, or a user message's parts."""


OPENAI = Profile(name="openai", family="openai", empty_tool_calls=True)
OPENAI_STRICT = Profile(
    name="openai-strict",
    family="openai",
    system="first_only",
    developer_role=False,
    alternation=True,
    merge_same_role=True,
    first_user=True,
    empty_tool_calls=True,
)
RESPONSES = Profile(
    name="responses", family="responses", results_adjacent=False, reasoning_followed=True
)
ANTHROPIC = Profile(
    name="anthropic",
    family="anthropic",
    result_block="merged_user",
    system="leading",
    first_user=True,
    nonempty=True,
    blank_is_empty=True,
    results_first=True,
    thinking_rules=True,
    result_style="user",
)
GEMINI = Profile(
    name="gemini",
    family="gemini",
    result_block="single",
    system="leading",
    first_user=True,
    nonempty=True,
    last_user=True,
    call_after_user=True,
    merge_same_role=True,
    result_style="user",
)

PROFILES: dict[str, Profile] = {
    p.name: p for p in (OPENAI, OPENAI_STRICT, RESPONSES, ANTHROPIC, GEMINI)
}


def get_profile(provider: str | Profile) -> Profile:
    if isinstance(provider, Profile):
        return provider
    try:
        return PROFILES[provider]
    except (KeyError, TypeError):
        raise ConfigurationError(
            f"unknown provider profile {provider!r}; expected one of {', '.join(PROFILES)}"
        ) from None
