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

__all__ = ["Constraint", "Requests", "constraint_sentences", "firm", "flagged", "label_of"]

_MARKER = re.compile(
    r"\b(?:never|must(?:n't| not)?|always|only|instead|avoid|prefer(?:s|red)?"
    r"|should(?:n't| not)?|no longer|make sure|ensure|required|forbidden|not allowed|"
    r"rule|constraint|preference|no more than|at most|at least|stop)\b"
    # "Do not …" tells someone what not to do; "I don't remember …" says no rule.
    r"|(?:^[\"'\u201c]?|[,;:(]\s*|\b(?:please|and|but|so|you|we|just)\s+)(?:do not|don't|dont)\b",
    re.IGNORECASE,
)
_PROMISE = re.compile(
    r"\b(?:I|we)(?:['\u2019]ll| will|['\u2019]m going to| am going to|['\u2019]re going to"
    r"| are going to)\s+(?:(?:always|also|just)\s+)?(?:make sure|ensure)\b",
    re.IGNORECASE,
)
"""A speaker's promise ("I'll make sure to keep it short"): a commitment of theirs, not a rule
they set; the rest of the sentence may still state one ("… never to push to main")."""
_CORRECTION = re.compile(
    r"\b(?:instead|actually|rather|correction|changed?|no longer|not anymore|from now on|"
    r"now|switch(?:ed)? to|update[ds]?|was)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*([A-Z][A-Z0-9]*(?:[ _/-][A-Z0-9]+){0,3}):\s+(?=\S)")
"""A label a person put before a statement to flag it: ``SAFETY RULE:``, ``FACT:``,
``IMPORTANT:``. Its capitals are no value and its words no subject of the statement."""
_RULE_LABEL = re.compile(r"RULE|CONSTRAINT|PREFERENCE|REQUIREMENT|POLICY|GUIDELINE", re.I)
"""A label that makes its whole line a rule, every sentence of it."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`*-])|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z_/.-]*[A-Za-z]|[A-Za-z]")
_VALUE = re.compile(
    # A figure standing alone ("port 8080", "$500", "90%"), not the digits of a name
    # ("module1.py", "v2"): a different name is a different thing, not a new value. Read
    # whole, its separators in and a comma after it out ("8080," is 8080).
    r"(?<![\w.,])[$€£]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)*%?(?![\w])"
    r"|`[^`]+`|\"[^\"]+\"|'[^']+'|\b[A-Z][A-Z0-9_]{2,}\b"
)
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "use",
        "using",
        "used",
        "please",
        "not",
        "no",
        "do",
        "don't",
        "dont",
        "never",
        "always",
        "only",
        "must",
        "should",
        "instead",
        "actually",
        "now",
        "will",
        "can",
        "all",
        "any",
        "from",
        "at",
        "by",
        "as",
        "so",
        "then",
        "than",
        "but",
        "if",
        "when",
    ]
)
_SENTENCE_CHARS = 400
_CODE_LINE = re.compile(
    r"^\d+[:→\t]"  # a numbered line of a file
    r"|^[\w.]+\s*(?:[-+*/]?=|\(|\[)"  # an assignment or a call
    r"|^(?:def|class|import|from|return|if|for|while|elif|else|try|except|raise)\b.*[:(]"
    # a string literal: quoted and followed by code's punctuation, or one quoted word (a
    # sentence a person put in quotes is still theirs)
    r"|^[\'\"`](?:[^\'\"`\n]*[\'\"`]\s*[:,;)\]}]|\S*[\'\"`]\s*$)"
)
_BULLET = re.compile(r"^(?:[-*\u2022]\s+)+")
"""A list item's marker (not the ``**`` of a bold opening)."""
_CUT = re.compile(r"… \[cut [\d,]+ characters\]\Z")
_SAME_SUBJECT = 0.5
_SUPERSEDED = "[superseded, see constraints]"


def _sentences(text: str) -> list[str]:
    """The prose sentences of ``text``: numbered file lines and code quoted in a request
    ("1463:    msg = '… must be …'") state no rule of the person's."""
    out = []
    for raw in _SENTENCE.split(text):
        sentence = _BULLET.sub("", raw.strip()).strip()
        if len(sentence) > 3 and not _CODE_LINE.match(sentence):
            out.append(sentence)
    return out


def flagged(text: str) -> bool:
    """Whether a person flagged ``text`` with a label (``FACT:``, ``GOAL:``, ``IMPORTANT:``):
    what they marked to be remembered outranks their other words."""
    return _LABEL.match(text) is not None


def label_of(text: str) -> tuple[str, str] | None:
    """``(label, statement)`` of a flagged ``text`` (``"SAFETY RULE"``, ``"Never …"``)."""
    found = _LABEL.match(text)
    return (found.group(1), text[found.end() :]) if found else None


_FIRM = re.compile(
    r"\b(?:never|must|always|only|forbidden|not allowed|no more than|at most|at least|"
    r"required|do not|don't|cannot|can't)\b|^\s*no\b",
    re.IGNORECASE,
)
_FIRM_LABEL = re.compile(r"RULE|CONSTRAINT|REQUIREMENT|POLICY", re.I)
_SOFT_LABEL = re.compile(r"PREFERENCE|GUIDELINE", re.I)


def firm(rule: str) -> bool:
    """Whether a constraint forbids or requires (``never``, ``must``, ``only``, a label
    saying RULE or CONSTRAINT) rather than states a preference or a suggestion: under a
    tight budget a prohibition outlasts a preference about style."""
    found = label_of(rule)
    if found is not None:
        if _FIRM_LABEL.search(found[0]):
            return True
        if _SOFT_LABEL.search(found[0]):
            return False
        rule = found[1]
    return _FIRM.search(rule) is not None


def _rule_lines(text: str) -> list[str]:
    """The lines of ``text`` a rule's label opens (``HARD CONSTRAINT: Only Python 3.11. No
    network.``): one rule each, all its sentences, the second with no rule's word of its
    own."""
    out = []
    for line in text.splitlines():
        label = _LABEL.match(line)
        if label is not None and _RULE_LABEL.search(label.group(1)):
            out.append(line.strip())
    return out


def _stated_rules(text: str) -> list[str]:
    """The constraints ``text`` states: its labelled rule lines whole, then the sentences of
    the rest that state a rule, a preference or a correction."""
    lines = _rule_lines(text)
    rest = "\n".join(line for line in text.splitlines() if line.strip() not in lines)
    return [*lines, *(s for s in _sentences(rest) if _states_rule(s))]


def _states_rule(sentence: str) -> bool:
    return _MARKER.search(_PROMISE.sub(" ", sentence)) is not None


def constraint_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that state a rule, a preference or a correction (a line a
    rule's label opens counts as one)."""
    return [bounded(s, _SENTENCE_CHARS) for s in _stated_rules(text)]


def _cut_at(text: str, chars: int) -> bool:
    """Whether ``text`` is already what :func:`bounded` makes of a longer text at ``chars``."""
    cut = _CUT.search(text)
    return cut is not None and cut.start() == chars


def _unlabelled(sentence: str) -> str:
    return _LABEL.sub("", sentence, count=1)


def _subject(sentence: str) -> frozenset[str]:
    without_values = _VALUE.sub(" ", _unlabelled(sentence))
    return frozenset(
        w.lower() for w in _WORD.findall(without_values) if w.lower() not in _STOP and len(w) > 2
    )


def _keys(sentence: str) -> frozenset[str]:
    sentence = _unlabelled(sentence)
    keys = set()
    for value in _VALUE.finditer(sentence):
        words = [w.lower() for w in _WORD.findall(sentence[: value.start()])]
        words = [w for w in words if w not in _STOP and len(w) > 2]
        if words:
            keys.add(words[-1])
    return frozenset(keys)


def _values(sentence: str) -> frozenset[str]:
    return frozenset(v.strip("`\"'").lower() for v in _VALUE.findall(_unlabelled(sentence)))


@dataclass(frozen=True, slots=True)
class Constraint:
    text: str
    subject: frozenset[str]
    values: frozenset[str]
    keys: frozenset[str] = frozenset()
    """The word each value is given to: ``port`` in "use port 8080", ``cap`` in "budget cap
    is $500"."""

    @classmethod
    def of(cls, text: str) -> Constraint:
        return cls(text, _subject(text), _values(text), _keys(text))

    def supersedes(self, earlier: Constraint) -> bool:
        """Whether this later sentence replaces ``earlier``: mostly the same subject, and
        either a different value, or words that say it corrects something and at least half
        of the words of the longer of the two in common."""
        if not self.subject or not earlier.subject or self.text == earlier.text:
            return False
        shared = len(self.subject & earlier.subject)
        overlap = shared / min(len(self.subject), len(earlier.subject))
        if overlap < _SAME_SUBJECT:
            return False
        if self.values and earlier.values and self.values != earlier.values:
            return True
        # A word alone ("instead", "now") corrects only a rule mostly about the same things:
        # "Instead, use the goto command." does not replace "Always wait after every command."
        broad = shared / max(len(self.subject), len(earlier.subject))
        return broad >= _SAME_SUBJECT and bool(_CORRECTION.search(self.text))

    def revalues(self, earlier: Constraint) -> bool:
        """Whether this sentence gives what ``earlier`` set another value: other values, and
        a value given to the same word ("port 8080", "port 9090") or at least half of the
        words of the longer of the two in common (stricter than :meth:`supersedes`, since
        ``earlier`` need not be a rule at all)."""
        if not self.values or not earlier.values or self.values == earlier.values:
            return False
        if self.keys & earlier.keys:
            return True
        shared = len(self.subject & earlier.subject)
        return shared / max(len(self.subject), len(earlier.subject), 1) >= _SAME_SUBJECT


@dataclass
class Requests:
    """The requests and constraints of a conversation, in order, with what was superseded.

    A later constraint supersedes an earlier one (:meth:`Constraint.supersedes`), and a
    sentence of an earlier request that set a value without a rule's words ("Use port
    8080.", "Budget cap is $500.") when it gives that another value
    (:meth:`Constraint.revalues`). A sentence that gives an earlier value another one and says
    it corrects it ("Budget cap is now $750.") is a constraint, though it has no rule's words.
    A superseded sentence is taken out of the requests that said it, not out of a later
    request that says it again."""

    requests: list[str] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    _upto: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    """For each superseded sentence, how many of the requests it is taken out of."""
    _stated: dict[int, tuple[int, Constraint]] = field(default_factory=dict, init=False, repr=False)
    """The requests' sentences that set a value without a rule's words (by a serial number,
    with their request's index), until a later value replaces them."""
    _scanned: int = field(default=0, init=False, repr=False)
    _said_in: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    """The request each constraint came from: one request does not correct itself."""
    _serial: int = field(default=0, init=False, repr=False)
    _words: dict[str, set[int]] = field(default_factory=dict, init=False, repr=False)
    _rule_words: dict[str, set[str]] = field(default_factory=dict, init=False, repr=False)
    _rules: dict[str, Constraint] = field(default_factory=dict, init=False, repr=False)
    """Statements and constraints by the words they speak of. Superseding and revaluing
    need a word in common, so each new sentence is held against those alone, not against
    every earlier one: a session of thousands of requests stays linear."""

    def _statements(self) -> None:
        for index in range(self._scanned, len(self.requests)):
            for sentence in _sentences(_CUT.sub("", self.requests[index])):
                if _VALUE.search(sentence) and not _states_rule(sentence):
                    serial = self._serial = self._serial + 1
                    statement = Constraint.of(sentence)
                    self._stated[serial] = (index, statement)
                    for word in statement.subject | statement.keys:
                        self._words.setdefault(word, set()).add(serial)
        self._scanned = len(self.requests)

    def _near(self, new: Constraint) -> tuple[list[Constraint], list[int]]:
        """The constraints and statements sharing a word with ``new``, oldest first."""
        self._statements()
        words = new.subject | new.keys
        texts = {t for w in words for t in self._rule_words.get(w, ())}
        serials = sorted({n for w in words for n in self._words.get(w, ())})
        # The constraints in the order they were stated (the dict keeps it).
        order = {t: i for i, t in enumerate(self._rules)} if texts else {}
        return [self._rules[t] for t in sorted(texts, key=order.__getitem__)], serials

    def _supersede(self, text: str, upto: int) -> None:
        if text not in self._upto:
            self.superseded.append(text)
        self._upto[text] = max(self._upto.get(text, 0), upto)

    def add_constraint(self, text: str) -> None:
        """``text`` as the latest constraint, superseding what it replaces: what requests
        said before the last request that says it, if one does."""
        said_in = (i for i in range(len(self.requests) - 1, -1, -1) if text in self.requests[i])
        found = next(said_in, None)
        self._add(text, len(self.requests) if found is None else found)
        if found is None:  # carried from an earlier record: before any request here
            self._said_in[text] = -1

    def _add(self, text: str, earlier: int) -> None:
        """``text`` as a constraint said in request ``earlier``: it supersedes the statements
        of the requests before that one, and the constraints so far."""
        if text in self._rules:
            return
        new = Constraint.of(text)
        if text in self._upto:  # said again: it holds once more
            self.superseded.remove(text)
            del self._upto[text]
        rules, serials = self._near(new)
        gone = set()
        for old in rules:
            if new.supersedes(old) and self._said_in.get(old.text, -1) < earlier:
                self._supersede(old.text, min(earlier + 1, len(self.requests)))
                gone.add(old.text)
        for serial in serials:
            index, old = self._stated[serial]
            if index < earlier and new.revalues(old):
                self._supersede(old.text, earlier)
                del self._stated[serial]
                for word in old.subject | old.keys:
                    self._words[word].discard(serial)
        self._said_in[text] = earlier
        for text_gone in gone:
            old_rule = self._rules.pop(text_gone)
            for word in old_rule.subject | old_rule.keys:
                self._rule_words[word].discard(text_gone)
        self._rules[text] = new
        if gone:
            self.constraints = list(self._rules.values())
        else:
            self.constraints.append(new)
        for word in new.subject | new.keys:
            self._rule_words.setdefault(word, set()).add(text)

    def _corrects(self, sentence: str, earlier: int) -> bool:
        """Whether ``sentence``, without a rule's words, says it corrects an earlier value."""
        if not _CORRECTION.search(sentence):
            return False
        new = Constraint.of(sentence)
        rules, serials = self._near(new)
        olds = [*rules, *(c for n in serials for i, c in [self._stated[n]] if i < earlier)]
        return any(new.revalues(old) for old in olds)

    def add_request(self, text: str, chars: int) -> None:
        """``text`` as a request (up to ``chars``) and its constraints. A request already cut
        at ``chars`` (carried from a digest) is not cut again."""
        self.requests.append(text if _cut_at(text, chars) else bounded(text, chars))
        earlier = len(self.requests) - 1
        lines = _rule_lines(text)
        for line in lines:
            self._add(bounded(line, _SENTENCE_CHARS), earlier)
        rest = "\n".join(line for line in text.splitlines() if line.strip() not in lines)
        for sentence in _sentences(rest):
            if _states_rule(sentence) or self._corrects(sentence, earlier):
                self._add(bounded(sentence, _SENTENCE_CHARS), earlier)

    def extend(self, later: Requests) -> None:
        """``later``'s requests and constraints after these, as a re-compaction carries a
        part after the previous record's: what ``later`` superseded in its own requests
        stays superseded, and its constraints supersede what came before it."""
        offset = len(self.requests)
        self.requests.extend(later.requests)
        for text in later.superseded:
            self._supersede(text, offset + later._upto.get(text, len(later.requests)))
        for constraint in later.constraints:
            self._add(constraint.text, offset)

    def current_requests(self) -> list[str]:
        """The requests with every superseded sentence taken out of those it was said in."""
        superseded = set(self.superseded)
        out = []
        for index, request in enumerate(self.requests):
            text = request
            if superseded:
                # A constraint is one of its request's sentences (a long one is kept cut
                # short, and a cut copy replaces nothing, as before).
                for sentence in dict.fromkeys(_sentences(_CUT.sub("", request))):
                    if sentence in superseded and index < self._upto[sentence]:
                        text = text.replace(sentence, _SUPERSEDED)
            out.append(text)
        return out
