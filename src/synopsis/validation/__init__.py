"""Validate a history against a provider's message rules, and repair what is unambiguous.

``validate`` and ``repair`` take a history in any supported format (or ``Message`` values)
and, for ``repair``, give it back in the same format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synopsis.formats import FormatName, decode, encode
from synopsis.validation.profiles import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    OPENAI_STRICT,
    PROFILES,
    RESPONSES,
    Profile,
    ProviderName,
    get_profile,
)
from synopsis.validation.repair import (
    INTERRUPTED,
    NOT_COMPLETED,
    Dangling,
    Fix,
    Repaired,
    dangling_policy,
    repair_messages,
)
from synopsis.validation.rules import Problem, check, separate_system

if TYPE_CHECKING:
    from collections.abc import Sequence

    from synopsis.messages import Message

__all__ = [
    "ANTHROPIC",
    "GEMINI",
    "INTERRUPTED",
    "NOT_COMPLETED",
    "OPENAI",
    "OPENAI_STRICT",
    "PROFILES",
    "RESPONSES",
    "Fix",
    "Problem",
    "Profile",
    "ProviderName",
    "Repaired",
    "RepairedList",
    "check",
    "check_between_turns",
    "get_profile",
    "repair",
    "repair_messages",
    "validate",
]


_OPEN_END = ("G5", "last_user")
"""Rules about how a history ends: the caller appends the next turn before sending, so a
history between turns that ends with the model's answer is not at fault."""


def check_between_turns(messages: Sequence[Message], profile: Profile) -> list[Problem]:
    """What ``messages`` break for ``profile``, but for how a history between turns ends:
    what a history a caller holds between two requests must not break."""
    return [p for p in check(messages, profile) if not p.rule.endswith(_OPEN_END)]


class RepairedList(list[Any]):
    """The repaired history (a plain list in the caller's format) with what was done to it:
    ``fixes``, and ``system``, the top-level system prompt for Anthropic and Gemini."""

    fixes: tuple[Fix, ...]
    system: object

    def __init__(self, items: Sequence[Any], fixes: tuple[Fix, ...], system: object) -> None:
        super().__init__(items)
        self.fixes = fixes
        self.system = system


def _model(
    messages: object, format: FormatName | None, system: object
) -> tuple[FormatName, tuple[Message, ...]]:
    decoded = decode(messages, format, system=system)
    return decoded.format, decoded.messages


def validate(
    messages: object,
    provider: ProviderName | str | Profile = "openai",
    *,
    format: FormatName | None = None,
    system: object = None,
) -> list[Problem]:
    """Every rule of ``provider`` that ``messages`` breaks; ``[]`` when the target would accept
    it. A trailing tool call still waiting for its result is valid (an agent mid-run).

    Each problem's ``index`` is a position in the caller's own list: a top-level system
    prompt passed apart from it (``system=``, or a request body's) is not counted, and a
    problem in that prompt has ``index=None``.

    Raises ``ConversationError`` when ``messages`` is not a history at all.
    """
    profile = get_profile(provider)
    fmt, model = _model(messages, format, system)
    return check(model, profile, offset=separate_system(model, fmt))


def repair(
    messages: object,
    provider: ProviderName | str | Profile = "openai",
    *,
    format: FormatName | None = None,
    system: object = None,
    dangling: Dangling = "answer",
    close_trailing_calls: bool = False,
) -> RepairedList:
    """``messages`` with every unambiguous fix for ``provider`` applied, in the same format.

    Orphaned results are removed; a dangling call in the middle is answered with a synthetic
    "not completed" result (``dangling="answer"``) or dropped; results away from their call
    are moved next to it; system messages are lifted where the target wants them first (for
    Anthropic into ``.system``, merged with the one already there); empty messages are
    dropped; a Responses reasoning item goes with the item it produced when that is dropped,
    and gets back a missing ``summary``; same-role neighbours are merged where alternation is
    required. ``.fixes`` lists each change, by position in the caller's own list (as for
    :func:`validate`); run :func:`validate` for what is left.

    A trailing call message whose results are still awaited (an agent mid-run) is left as it
    is, unless ``close_trailing_calls=True``: the run was interrupted and those results will
    never come, so each of its open calls gets one synthetic result saying so
    (:data:`INTERRUPTED`: a tool message for OpenAI, a ``tool_result`` block for Anthropic, a
    ``functionResponse`` for Gemini), each listed in ``.fixes``.

    Raises ``ConfigurationError`` for an unknown ``provider`` or ``dangling`` policy.
    """
    dangling = dangling_policy(dangling)
    profile = get_profile(provider)
    fmt, model = _model(messages, format, system)
    fixed = repair_messages(
        model,
        profile,
        dangling=dangling,
        close_trailing_calls=close_trailing_calls,
        offset=separate_system(model, fmt),
    )
    wire = encode(fixed.messages, fmt)
    return RepairedList(wire.messages, fixed.fixes, wire.system)
