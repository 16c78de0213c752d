"""How every output is judged: one tokenizer for sizes, synopsis's provider validator for the
rules, and tessera-transcript's pairing check as a second opinion from outside."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import synopsis
from benchmarks.compare.inputs import leading_system

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchmarks.compare.systems import Budget, Items, System

PROVIDERS = ("openai", "anthropic")
CALL_LIMIT = 20.0
"""Seconds one call may take in the validity, retention and replay runs. With an instant
summarizer a call that needs longer is broken for an agent loop; it is stopped and counted."""


class OutOfTime(Exception):
    """A call stopped after its time limit."""


def _alarm(signum: int, frame: object) -> None:
    raise OutOfTime("still running at the time limit")


def call_step(
    system: System, history: Any, budget: Budget, limit: float = CALL_LIMIT
) -> tuple[Any, float]:
    """``system.step`` and the seconds it took, stopped after ``limit`` seconds (main thread
    only): the one timed call every part of the benchmark makes."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.perf_counter()
    try:
        result = system.step(history, budget)
    finally:
        elapsed = time.perf_counter() - start
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if elapsed >= limit:
        # the system caught the alarm somewhere inside and returned: still out of time
        raise OutOfTime(f"ran for {limit:.0f} s or more")
    return result, elapsed


def prompt_tokens(items: Items) -> tuple[int, int]:
    """The tokens of the leading system prompt, and of the whole history."""
    start = leading_system(items)
    return (tokens(items[:start]) if start else 0), tokens(items)


_OPEN_END = ("G5", "last_user")
"""Rules about how a history ends. A history cut at any point may end on the model's turn;
the agent appends the next user turn before sending, so those rules are not held against it."""


def tokens(items: Items) -> int:
    return synopsis.count_tokens(items)


def message_tokens(item: dict[str, Any]) -> int:
    return synopsis.count_tokens([item])


def problems(items: Items, provider: str) -> list[synopsis.Problem]:
    """What ``provider`` would object to, less the open-end rules."""
    if not items:
        return [synopsis.Problem(None, "history.empty", "the history has no messages")]
    found = synopsis.validate(items, provider=provider, format="openai")
    return [p for p in found if not p.rule.endswith(_OPEN_END)]


def rejected(found: list[synopsis.Problem]) -> bool:
    """Whether the provider answers HTTP 400: any problem it enforces (a conservative rule is
    one synopsis holds to though the provider may let it pass)."""
    return any(not p.conservative for p in found)


@dataclass
class Tally:
    """What one system did over many inputs."""

    outputs: int = 0
    compacted: int = 0
    raised: int = 0
    valid: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROVIDERS, 0))
    http_400: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROVIDERS, 0))
    tessera_pass: int = 0
    tessera_checked: int = 0
    tessera_failures: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)
    example: str = ""

    def judge(self, out: Items, tessera: Callable[[Items], tuple[bool, str]] | None) -> None:
        self.outputs += 1
        for provider in PROVIDERS:
            found = problems(out, provider)
            if not found:
                self.valid[provider] += 1
                continue
            self.http_400[provider] += rejected(found)
            for p in found:
                self.rules[p.rule] = self.rules.get(p.rule, 0) + 1
            if not self.example:
                self.example = f"{provider}: {found[0]}"
        if tessera is not None:
            self.tessera_checked += 1
            passed, reason = tessera(out)
            self.tessera_pass += passed
            if not passed:
                kind = reason[1 : reason.find("]")] if reason.startswith("[") else "other"
                self.tessera_failures[kind] = self.tessera_failures.get(kind, 0) + 1

    def failed(self, error: BaseException) -> None:
        self.raised += 1
        key = type(error).__name__
        self.errors[key] = self.errors.get(key, 0) + 1

    def as_json(self) -> dict[str, Any]:
        return {
            "outputs": self.outputs,
            "compacted": self.compacted,
            "raised": self.raised,
            "valid": self.valid,
            "http_400": self.http_400,
            "tessera_pass": self.tessera_pass,
            "tessera_checked": self.tessera_checked,
            "tessera_failures": self.tessera_failures,
            "errors": self.errors,
            "rules": dict(sorted(self.rules.items(), key=lambda kv: -kv[1])),
            "example": self.example,
        }
