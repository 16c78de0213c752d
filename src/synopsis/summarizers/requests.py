"""What a person asked for and the rules they set: the part of a summary never cut while
anything else remains.

A request is what a person typed. Agent harnesses that send tool observations as user turns
(SWE-agent's text mode, OpenHands) make many user turns that nobody wrote; those are not
requests (:func:`~synopsis.summarizers.scanning.looks_like_observation`).

A constraint is a sentence of a request that states a rule, a preference or a correction
("never …", "do not …", "only …", "use X instead", "always …"). A later constraint supersedes
an earlier one about the same thing: when it says so ("instead", "actually", "now", "no
longer"…) or states a different value (a number, a quoted or code value) with mostly the same
words. A superseded value is dropped from the summary everywhere, so a continued session cannot
act on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from synopsis.summarizers.scanning import bounded

__all__ = ["Constraint", "Requests", "constraint_sentences"]

_MARKER = re.compile(
    r"\b(?:never|do not|don't|dont|must(?:n't| not)?|always|only|instead|avoid|prefer(?:s|red)?"
    r"|should(?:n't| not)?|no longer|make sure|ensure|required|forbidden|not allowed|"
    r"rule|constraint|preference|no more than|at most|at least|stop)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:instead|actually|rather|correction|changed?|no longer|not anymore|from now on|"
    r"now|switch(?:ed)? to|update[ds]?|was)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`*-])|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z_/.-]*[A-Za-z]|[A-Za-z]")
_VALUE = re.compile(
    r"[$€£]?\d[\d,]*(?:\.\d+)*%?|`[^`]+`|\"[^\"]+\"|'[^']+'|\b[A-Z][A-Z0-9_]{2,}\b"
)
_STOP = frozenset(
    "the a an and or to of in on for with is are be it this that we you i me my our your "
    "use using used please not no do don't dont never always only must should instead "
    "actually now will can all any from at by as so then than but if when".split()
)
_SENTENCE_CHARS = 400
_CUT = re.compile(r"… \[cut [\d,]+ characters\]\Z")
_SAME_SUBJECT = 0.5


def constraint_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that state a rule, a preference or a correction."""
    out = []
    for raw in _SENTENCE.split(text):
        sentence = raw.strip().lstrip("-*• ").strip()
        if len(sentence) > 3 and _MARKER.search(sentence):
            out.append(bounded(sentence, _SENTENCE_CHARS))
    return out


def _cut_at(text: str, chars: int) -> bool:
    """Whether ``text`` is already what :func:`bounded` makes of a longer text at ``chars``."""
    cut = _CUT.search(text)
    return cut is not None and cut.start() == chars


def _subject(sentence: str) -> frozenset[str]:
    without_values = _VALUE.sub(" ", sentence)
    return frozenset(
        w.lower() for w in _WORD.findall(without_values) if w.lower() not in _STOP and len(w) > 2
    )


def _values(sentence: str) -> frozenset[str]:
    return frozenset(v.strip("`\"'").lower() for v in _VALUE.findall(sentence))


@dataclass(frozen=True, slots=True)
class Constraint:
    text: str
    subject: frozenset[str]
    values: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Constraint:
        return cls(text, _subject(text), _values(text))

    def supersedes(self, earlier: Constraint) -> bool:
        """Whether this later sentence replaces ``earlier``: mostly the same subject, and
        either a different value or words that say it corrects something."""
        if not self.subject or not earlier.subject or self.text == earlier.text:
            return False
        shared = len(self.subject & earlier.subject)
        overlap = shared / min(len(self.subject), len(earlier.subject))
        if overlap < _SAME_SUBJECT:
            return False
        different = bool(self.values) and bool(earlier.values) and self.values != earlier.values
        return different or bool(_CORRECTION.search(self.text))


@dataclass
class Requests:
    """The requests and constraints of a conversation, in order, with what was superseded."""

    requests: list[str] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)

    def add_constraint(self, text: str) -> None:
        new = Constraint.of(text)
        if any(c.text == text for c in self.constraints):
            return
        kept = []
        for old in self.constraints:
            if new.supersedes(old):
                self.superseded.append(old.text)
            else:
                kept.append(old)
        self.constraints = [*kept, new]

    def add_request(self, text: str, chars: int) -> None:
        """``text`` as a request (up to ``chars``) and its constraints. A request already cut
        at ``chars`` (carried from a digest) is not cut again."""
        self.requests.append(text if _cut_at(text, chars) else bounded(text, chars))
        for sentence in constraint_sentences(text):
            self.add_constraint(sentence)

    def current_requests(self) -> list[str]:
        """The requests with every superseded sentence taken out."""
        out = []
        for request in self.requests:
            text = request
            for old in self.superseded:
                text = text.replace(old, "[superseded, see constraints]")
            out.append(text)
        return out
