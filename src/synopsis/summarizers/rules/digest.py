"""One pass over the messages to summarize, collecting what the rule-based summary keeps.

Tool calls are taken with their results (paired as :mod:`synopsis.pairing` does, so reused ids
and parallel calls come out right) and handed to the extractor for the tool's name. People's
words are kept verbatim up to a bound; assistant text gives the reasoning, the decisions and
what was in progress. Nothing here counts tokens or drops content for a budget: that is
:mod:`synopsis.summarizers.rules.budget`'s job.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from synopsis.messages import (
    MediaPart,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_person_message,
    is_summary,
)
from synopsis.pairing import pair_tool_calls
from synopsis.summarizers.requests import Requests
from synopsis.summarizers.rules.exchanges import Extractor, ToolExchange, ToolFacts, parse_arguments
from synopsis.summarizers.rules.extractors import (
    find_extractor,
    generic_extractor,
    search_extractor,
)
from synopsis.summarizers.rules.repeats import Originals, group_points, reference_in, repeated
from synopsis.summarizers.scanning import (
    bounded,
    dedupe,
    looks_like_observation,
    paths_in,
    scan_text,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["LATEST_USER", "Digest", "digest"]

LATEST_USER = "Answer the user's latest message (the last of the user messages above)."
"""The next step when the part ends with the user speaking; it points at the message, which
the summary quotes anyway, rather than quoting it twice."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|chose|chosen|opted|instead of|going with|settled on|"
    r"switch(?:ed|ing)? to|(?:we|I)(?:'ll| will) use)\b",
    re.IGNORECASE,
)
_TODO = re.compile(
    r"^\s*(?:[-*]\s*\[ \]\s*|TODO:?\s*|(?:remaining|still to do|next):\s*)(.+)$", re.I
)
_NEXT = re.compile(
    r"^(?:next,?|then,?|now,? (?:I|we)(?:'ll| will| need to)|I(?:'ll| will| need to)|"
    r"let me|let's|we (?:need to|should|will))\b",
    re.IGNORECASE,
)
# Argument values this long are file bodies or patches, not names worth scanning for anchors.
_SCAN_ARG_CHARS = 300
_ID_KEY = re.compile(r"(?:^|_)(?:id|ids|pid|uuid)$", re.IGNORECASE)
_ID_CHARS = 64
_SCAN_OUTPUT_CHARS = 50_000


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _first_sentence(text: str) -> str:
    """The first sentence that says something ("Done." does not)."""
    for sentence in _sentences(text):
        if len(sentence.split()) >= 4:
            return bounded(sentence, 200)
    return ""


@dataclass
class Digest:
    """What one pass found, in order of appearance."""

    messages: int = 0
    roles: Counter[str] = field(default_factory=Counter)
    participants: list[str] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    repeated: int = 0
    """Calls whose result repeats one summarized before this part (its outcome is there)."""
    key_points: list[str] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    user_messages: list[str] = field(default_factory=list)
    requests: Requests = field(default_factory=Requests)
    """What people asked for and the rules they set (tool observations sent as user turns
    are not among them), after those of earlier parts when the walk was given them."""
    people: int = 0
    """The person's messages in this part."""
    named_files: list[str] = field(default_factory=list)
    """Paths people or the model named in their own words or in a call's short arguments."""
    seen_files: list[str] = field(default_factory=list)
    """Paths only a tool's output showed (a listing, a log, a traceback)."""
    assistant_texts: list[str] = field(default_factory=list)
    plan_steps: list[str] | None = None
    first_request: str | None = None
    last_user_after_assistant: bool = False
    earlier_summaries: list[str] = field(default_factory=list)
    outcomes: dict[str, bool] = field(default_factory=dict)
    """How the last call on each ``tool `target``` went (``True``: it worked), so that a later
    part can mark an earlier summary's failure as resolved."""
    concepts: Counter[str] = field(default_factory=Counter)
    entities: dict[str, list[str]] = field(
        default_factory=lambda: {
            k: [] for k in ("files", "symbols", "commands", "urls", "errors", "versions", "numbers")
        }
    )

    def add_entities(self, kind: str, values: Sequence[str]) -> None:
        self.entities[kind].extend(v for v in values if v)

    def scan(self, text: str, *, concepts: bool) -> None:
        found = scan_text(text)
        self.add_entities("files", found.files)
        self.named_files.extend(found.files)
        self.add_entities("urls", found.urls)
        self.add_entities("symbols", found.symbols)
        self.add_entities("versions", found.versions)
        self.add_entities("numbers", found.numbers)
        if concepts:
            # Once per message: a term the conversation keeps returning to outranks one
            # repeated inside a single pasted log.
            self.concepts.update(dict.fromkeys((*found.symbols, *found.versions), 1))

    @property
    def pending(self) -> list[str]:
        """Open plan steps if a plan tool ran, else to-do lines of the last assistant text."""
        if self.plan_steps is not None:
            return self.plan_steps
        if not self.assistant_texts:
            return []
        lines = self.assistant_texts[-1].splitlines()
        return [bounded(m.group(1).strip(), 200) for m in map(_TODO.match, lines) if m]

    @property
    def next_step(self) -> str | None:
        if self.last_user_after_assistant:
            return LATEST_USER
        if self.assistant_texts:
            for sentence in _sentences(self.assistant_texts[-1]):
                if _NEXT.match(sentence):
                    return bounded(sentence, 300)
        return None

    @property
    def decisions(self) -> list[str]:
        found = [
            bounded(s, 200)
            for text in self.assistant_texts
            for s in _sentences(text)
            if _DECISION.search(s)
        ]
        return dedupe(found)[-10:]

    @property
    def reasoning(self) -> list[str]:
        return dedupe([s for s in map(_first_sentence, self.assistant_texts) if s])[-20:]


def _user_text(message: Message) -> str:
    out = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(part.text)
        elif isinstance(part, MediaPart):
            out.append(part.placeholder)
    return "\n".join(t for t in out if t)


def _facts(extractor: Extractor, exchange: ToolExchange) -> ToolFacts:
    try:
        return extractor(exchange)
    except Exception:  # a caller's extractor must not take the summary down
        return generic_extractor(exchange)


class _Walker:
    def __init__(self, extractors: Mapping[str, Extractor], user_chars: int) -> None:
        self.extractors = extractors
        self.user_chars = user_chars
        self.out = Digest()
        # One entry per distinct failure, with its (tool, target) and how often it happened;
        # whether it was fixed depends on how the last call with that key went.
        self.failures: dict[str, tuple[tuple[str, str], int]] = {}
        self.last_ok: dict[tuple[str, str], bool] = {}

    def exchange(
        self, name: str, arguments: str | Mapping[str, object], results: list[ToolResultPart]
    ) -> None:
        args, raw = parse_arguments(arguments)
        for key, value in args.items():
            if isinstance(value, str) and len(value) <= _SCAN_ARG_CHARS:
                self.out.scan(value, concepts=False)
            if _ID_KEY.search(key) and isinstance(value, str | int) and not isinstance(value, bool):
                # The process, reservation or session a call acted on: the next call on it
                # needs the same id, which no pattern of prose would pick out.
                ident = str(value).strip()
                if 0 < len(ident) <= _ID_CHARS:
                    self.out.add_entities("symbols", [ident])
        exchange = ToolExchange(
            name=name,
            arguments=args,
            raw_arguments=raw,
            result="\n".join(r.text for r in results) if results else None,
            is_error=any(r.is_error for r in results),
        )
        extractor = find_extractor(name, self.extractors)
        refs = [ref for r in results if (ref := reference_in(r.text)) is not None]
        if results and not exchange.is_error and len(refs) == len(results):
            # A result repeating one an earlier summary covered: not a one-line success.
            facts = _facts(extractor, replace(exchange, result=None))
            self.record(name, repeated(facts, refs[0]))
            return
        if exchange.result:
            self.seen(exchange.result)
        facts = _facts(extractor, exchange)
        self.record(name, facts, searched=extractor is search_extractor)

    def record(self, name: str, facts: ToolFacts, *, searched: bool = False) -> None:
        out = self.out
        out.tools[name] += 1
        out.key_points.append(facts.key_point)
        for path, note in facts.notes:
            out.files.setdefault(path, []).append(note)
        if searched:
            for path in facts.files:
                out.files.setdefault(path, []).append("found")
        out.add_entities("files", facts.files)
        out.add_entities("symbols", facts.symbols)
        out.add_entities("commands", facts.commands)
        out.add_entities("urls", facts.urls)
        out.add_entities("errors", facts.errors)
        if facts.plan is not None:
            out.plan_steps = list(facts.plan)
        key = (facts.tool, facts.target or "")
        target = f" `{bounded(facts.target, 80)}`" if facts.target else ""
        if facts.status == "repeated":
            out.repeated += 1
        elif facts.status == "error":
            out.failed += 1
            text = f"{facts.tool}{target}: {facts.errors[0] if facts.errors else 'failed'}"
            _, times = self.failures.get(text, (key, 0))
            self.failures[text] = (key, times + 1)
            self.last_ok[key] = False
        elif facts.status == "pending":
            out.unresolved.append(f"{facts.tool}{target}: no result in the summarized part")
        else:
            self.last_ok[key] = True

    def finish(self) -> None:
        self.out.key_points = group_points(self.out.key_points)
        for text, (key, times) in self.failures.items():
            repeated = f" ({times} times)" if times > 1 else ""
            fixed = ""
            if self.last_ok[key]:
                # Without a target, "fixed" would overclaim: only the tool is known to work.
                fixed = (
                    " (fixed: a later attempt succeeded)" if key[1] else " (a later call worked)"
                )
            self.out.errors.append(text + repeated + fixed)
        for (tool, target), ok in self.last_ok.items():
            shown = f" `{bounded(target, 80)}`" if target else ""
            self.out.outcomes[f"{tool}{shown}"] = ok
            if not ok:
                self.out.unresolved.append(f"{tool}{shown}: last attempt failed")

    def seen(self, output: str) -> None:
        # Paths in a listing come early; a long log's tail is where a traceback names its
        # files. The middle of a huge output is not worth the scan.
        head = output[:_SCAN_OUTPUT_CHARS]
        tail = output[-_SCAN_OUTPUT_CHARS // 4 :] if len(output) > _SCAN_OUTPUT_CHARS else ""
        self.out.seen_files.extend(paths_in(head))
        self.out.seen_files.extend(paths_in(tail))

    def user(self, message: Message) -> None:
        text = _user_text(message)
        if not text.strip():
            return
        if looks_like_observation(text):
            # A harness's tool output in a user turn: summarized as the tool result it is.
            exchange = ToolExchange(name="observation", arguments={}, result=text)
            self.record("observation", _facts(generic_extractor, exchange))
            self.seen(text)
            return
        if self.out.first_request is None:
            self.out.first_request = text
        self.out.people += 1
        self.out.user_messages.append(bounded(text, self.user_chars))
        self.out.requests.add_request(text, self.user_chars)
        self.out.scan(text, concepts=True)
        self.out.last_user_after_assistant = True

    def assistant(self, message: Message) -> None:
        text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
        if text:
            self.out.assistant_texts.append(text)
            self.out.scan(text, concepts=True)
            self.out.last_user_after_assistant = False


def digest(
    messages: Sequence[Message],
    extractors: Mapping[str, Extractor],
    user_chars: int,
    *,
    requests: Requests | None = None,
) -> Digest:
    """What ``messages`` hold; their requests added to ``requests`` (earlier parts' requests
    and constraints) when given, so that a correction of an earlier part's value is read as
    one."""
    walker = _Walker(extractors, user_chars)
    out = walker.out
    if requests is not None:
        out.requests = requests
    out.messages = len(messages)
    pairing = pair_tool_calls(messages)
    originals = Originals(messages)
    orphans = set(pairing.orphans)
    for mi, message in enumerate(messages):
        out.roles[message.role.value] += 1
        label = f"{message.role.value} ({message.name})" if message.name else message.role.value
        if label not in out.participants:
            out.participants.append(label)
        if is_summary(message):
            out.earlier_summaries.append(_user_text(message))
        elif is_person_message(message):
            walker.user(message)
        elif message.role is Role.ASSISTANT:
            walker.assistant(message)
        for pi, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                results = [
                    originals.resolve(pairing.result_part(messages, r), r[0])
                    for r in pairing.result_of[(mi, pi)]
                ]
                walker.exchange(part.name, part.arguments, results)
            elif isinstance(part, ToolResultPart) and (mi, pi) in orphans:
                walker.exchange(part.name or "unknown_tool", "", [originals.resolve(part, mi)])
    walker.finish()
    return out
