"""Retention over replayed sessions: what an agent still has of what each compaction took away.

Every bundled transcript is played back message by message, as a live agent sends it, into a
context window of 8,000 and of 32,000 tokens. Before each assistant message (a model request)
the system gets the history as it stands; when it compacts, its output is what goes to the
model and, for a system that persists its compaction, the history the next messages are
appended to (a system that only rewrites the outgoing request, ``persists`` false, keeps the
whole history and compacts again on the next request, as in production, less what a part of
it that does persist changed; see :func:`benchmarks.compare.systems.carried`).

At each compaction the *removed part* is the messages of the history before the call that are
not, word for word, in the output (summaries of earlier compactions included: a path an earlier
summary carried and this one drops is lost here). Measured on it, with fixed patterns that know
nothing of any compared system:

* **paths**: the share of its file paths (:mod:`benchmarks.compare.anchors`'s pattern) that
  occur anywhere in the compacted history;
* **requests**: the share of its requests' first lines that occur there. A request is a user
  message a person wrote (see :func:`benchmarks.compare.anchors.person_messages`): its first
  non-blank line, whitespace-squashed, up to 80 characters;
* **first request**: whether the session's first request's first line occurs there, at every
  compaction whether or not this one removed it;
* **constraints**: for every constraint stated in the requests so far (see
  :func:`constraints`), whether it occurs there;
* **salient anchors** (for the trade-off): :mod:`benchmarks.compare.anchors`'s five kinds in the
  removed part's requests and assistant messages.

Shares are pooled: of everything removed at every compaction of every session, the share
present. Tokens sent are the o200k tokens of every request over the session. Beside them,
what the sessions cost each system (:mod:`benchmarks.compare.session_costs`): compactions
within two requests of the one before, where each landed, summarizer calls, and the input
priced with a provider's prefix cache, with the sessions sent whole as a baseline.

Who runs, and how
    synopsis: ``synopsis.Compactor(context_window=W, model="gpt-4o", summarizer="rules",
    store="memory", session_id=...)`` per session, with its own defaults (trigger at 80% of
    the window, a compaction landing at ``target_ratio`` of it), and again at each target of
    :data:`TARGETS` for the trade-off; its ``result.messages`` are carried on as the history.
    The peers: each one's own non-LLM path where it has one, else the content-free fake
    summary (as the retention table runs them), with ``Budget(trigger=0.8 W, keep=L W - the
    system prompt's tokens, window=W)``: the same trigger as synopsis and told to keep, word
    for word, the newest messages up to where synopsis's default compaction lands
    (:data:`PEER_LANDING`, the system prompt included). That is the fair equivalent of a
    default: the peers' own defaults are counts of messages (LangChain keeps 20,
    adk-deepagents 6) or none at all (langmem requires ``max_tokens``), which land anywhere in
    a fixed window. zrb's ``fit_context_window`` takes no keep: it drops whole turns until the
    history fits 90% of a request limit set so that this is the trigger.

A session whose system prompt alone is over the trigger cannot fit the window: every request
stays over it whatever is compacted. It is left out of that window's numbers for every system
(the Codex session's two system messages are about 10k tokens: it is left out at 8k).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from benchmarks.compare import anchors
from benchmarks.compare.anchors import message_key
from benchmarks.compare.inputs import leading_system, observation_sessions
from benchmarks.compare.judge import PROVIDERS, call_step, problems, tokens
from benchmarks.compare.session_costs import Meter, counting_summaries, merged, uncompacted
from benchmarks.compare.systems import Budget, Items, System, carried

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

WINDOWS = (8_000, 32_000)
TRIGGER_SHARE = 0.8
"""synopsis's default trigger, and the peers'."""
PEER_LANDING = 0.5
"""Where the peers are told to land (system prompt, kept tail): synopsis's default target."""
TARGETS = (0.2, 0.3, 0.4, 0.5, 0.6)
"""synopsis's ``target_ratio`` values for the retention-versus-cost trade-off."""
GOALS = {8_000: 0.5, 32_000: 0.9}
"""The issue's targets for the paths and request first lines of the removed part, by window."""
REQUEST_CHARS = 80
MISSED_SHOWN = 20
"""How many lost paths, requests and constraints each session's results name."""
MEASURES = ("paths", "requests", "first", "constraints", "salient")

# -- the fixed extractors ---------------------------------------------------------------------

_CONSTRAINT = re.compile(r"\b(?:never|do not|don't|don’t|must|always|only|instead)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
CONSTRAINT_CHARS = 200
"""A constraint longer than this is matched by its first 200 characters (squashed)."""


def first_line(text: str) -> str:
    """A request's identity: its first non-blank line, whitespace-squashed, up to 80 chars."""
    for line in text.splitlines():
        squashed = anchors.squash(line)
        if squashed:
            return squashed[:REQUEST_CHARS]
    return ""


def constraints(text: str) -> list[str]:
    """The constraints a message states: its sentences (lines, split after . ! ?) that say
    never, do not, don't, must, always, only or instead; squashed, cut to 200 characters."""
    out: list[str] = []
    for line in text.splitlines():
        for sentence in _SENTENCE_END.split(line):
            squashed = anchors.squash(sentence)[:CONSTRAINT_CHARS]
            if _CONSTRAINT.search(squashed) and squashed not in out:
                out.append(squashed)
    return out


def removed(before: Items, after: Items) -> Items:
    """The messages of ``before`` not in ``after`` word for word (as many times as they
    occur: a message twice in ``before`` and once in ``after`` is removed once)."""
    left = Counter(message_key(i) for i in after)
    out = []
    for item in before:
        key = message_key(item)
        if left[key]:
            left[key] -= 1
        else:
            out.append(item)
    return out


def absent(needles: Iterable[str], text: str) -> list[str]:
    """The needles that do not occur in ``text`` (already squashed), in sorted order."""
    return sorted(n for n in needles if anchors.squash(n) not in text)


# -- one session ------------------------------------------------------------------------------


@dataclass
class Session:
    """A transcript and what the fixed extractors find in it."""

    name: str
    items: Items
    requests: dict[int, str]
    """First lines of the person's messages, by index in the transcript."""
    stated: dict[int, list[str]]
    """Constraints stated in each of those messages."""
    keys: dict[str, str] = field(default_factory=dict)
    """:func:`message_key` of each of those messages, to its first line."""

    @classmethod
    def of(cls, name: str, items: Items, *, observations_in_user_turns: bool = False) -> Session:
        people = anchors.person_messages(
            items, observations_in_user_turns=observations_in_user_turns
        )
        return cls(
            name=name,
            items=items,
            requests={i: first_line(anchors.text_of(items[i])) for i in people},
            stated={i: constraints(anchors.text_of(items[i])) for i in people},
            keys={message_key(items[i]): first_line(anchors.text_of(items[i])) for i in people},
        )

    @property
    def first_request(self) -> str | None:
        return self.requests[min(self.requests)] if self.requests else None

    def system_tokens(self) -> int:
        start = leading_system(self.items)
        return tokens(self.items[:start]) if start else 0


@dataclass
class Tally:
    """Counts over compactions: for each measure, ``[present, checked]``."""

    compactions: int = 0
    requests_made: int = 0
    tokens_sent: int = 0
    largest: int = 0
    over_window: int = 0
    """Requests larger than the window: a provider would refuse them."""
    counts: dict[str, list[int]] = field(default_factory=lambda: {m: [0, 0] for m in MEASURES})
    missed: dict[str, list[str]] = field(
        default_factory=lambda: {"paths": [], "requests": [], "constraints": []}
    )
    """What was lost at least once, by measure, in the order first lost (for a reader)."""
    invalid: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROVIDERS, 0))
    """Compactions whose output each provider would refuse (:func:`~benchmarks.compare.judge.
    problems`: every rule but those on how a history ends)."""
    first_missed_at: list[int] = field(default_factory=list)
    """Compactions (1-based) whose output lacks the first request's first line."""
    spent: list[dict[str, Any]] = field(default_factory=list)
    """What each session cost (:meth:`benchmarks.compare.session_costs.Meter.as_json`)."""

    def add(self, measure: str, kept: int, found: int) -> None:
        self.counts[measure][0] += kept
        self.counts[measure][1] += found

    def check(self, measure: str, needles: Iterable[str], text: str) -> None:
        """Count ``needles`` (distinct) against ``text`` (squashed), noting the lost ones."""
        wanted = set(needles)
        lost = absent(wanted, text)
        self.add(measure, len(wanted) - len(lost), len(wanted))
        noted = self.missed[measure]
        noted.extend(n for n in lost if n not in noted)

    def merge(self, other: Tally) -> None:
        self.compactions += other.compactions
        self.requests_made += other.requests_made
        self.tokens_sent += other.tokens_sent
        self.largest = max(self.largest, other.largest)
        self.over_window += other.over_window
        self.spent += other.spent
        for provider in PROVIDERS:
            self.invalid[provider] += other.invalid[provider]
        for m in MEASURES:
            self.add(m, *other.counts[m])

    def as_json(self) -> dict[str, Any]:
        return {
            "compactions": self.compactions,
            "model_requests": self.requests_made,
            "tokens_sent": self.tokens_sent,
            "largest_request": self.largest,
            "over_window": self.over_window,
            "invalid": dict(self.invalid),
            **{m: list(self.counts[m]) for m in MEASURES},
            **{f"missed_{m}": v[:MISSED_SHOWN] for m, v in self.missed.items()},
            "first_missed_at": self.first_missed_at[:MISSED_SHOWN],
            **merged(self.spent),
        }


def measure(tally: Tally, session: Session, before: Items, after: Items, appended: int) -> None:
    """One compaction: ``before`` the history handed over, ``after`` what came back, after the
    transcript's first ``appended`` messages."""
    tally.compactions += 1
    for provider in PROVIDERS:
        tally.invalid[provider] += bool(problems(after, provider))
    gone = removed(before, after)
    text = anchors.squash("\n".join(anchors.text_of(i) for i in after))
    tally.check("paths", anchors.extract(gone)["path"], text)
    tally.check(
        "requests", (session.keys[k] for k in map(message_key, gone) if k in session.keys), text
    )
    first = session.first_request
    if first is not None and any(i < appended for i in session.requests):
        held = anchors.squash(first) in text
        tally.add("first", int(held), 1)
        if not held:
            tally.first_missed_at.append(tally.compactions)
    tally.check(
        "constraints", (c for i, cs in session.stated.items() if i < appended for c in cs), text
    )
    people = [i for i in gone if message_key(i) in session.keys]
    spoken = anchors.extract(
        [*people, *(i for i in gone if i.get("role") == "assistant")],
        lambda item: message_key(item) in session.keys,
    )
    tally.add(
        "salient",
        sum(anchors.retained(spoken, after).values()),
        sum(len(v) for v in spoken.values()),
    )


def replay_session(system: System, session: Session, budget: Budget) -> Tally:
    """``session`` played back through ``system``: a request before each assistant message."""
    tally = Tally()
    history: Items = []
    meter = Meter(budget.window)
    with counting_summaries() as summaries:
        for index, item in enumerate(session.items):
            if item.get("role") == "assistant" and history:
                before = summaries() + getattr(system, "summaries", 0)
                result, _ = call_step(system, system.native(history), budget)
                calls = summaries() + getattr(system, "summaries", 0) - before
                sent = history
                if result is not None:
                    sent = system.items(result)
                    measure(tally, session, history, sent, index)
                    history = carried(system, history, sent, result)
                size = tokens(sent)
                tally.requests_made += 1
                tally.tokens_sent += size
                tally.largest = max(tally.largest, size)
                tally.over_window += size > budget.window
                meter.request(sent, size, compacted=result is not None, calls=calls)
            history = [*history, item]
    tally.spent.append(meter.as_json())
    return tally


# -- synopsis with its own defaults -----------------------------------------------------------


class SynopsisReplay:
    """synopsis as an application uses it: a ``Compactor`` per session, its own trigger and
    landing (the budget only gives the window), rule-based summarizer, memory store; at
    ``target_ratio`` when one is given, with ``strategy`` when one is given."""

    name = "synopsis"

    def __init__(
        self, session: str, target: float | None = None, strategy: Sequence[str] | None = None
    ) -> None:
        self.session = session
        self.target = target
        self.strategy = None if strategy is None else tuple(strategy)
        self.label = f"synopsis {version('synopsis')} Compactor"
        self._compactor: Any = None
        self.summaries = 0
        """Compactions that wrote a summary: the rule-based summarizer's calls."""

    def compactor(self, window: int) -> Any:
        import synopsis  # noqa: PLC0415 - the library under test, imported once it is needed

        if self._compactor is None:
            options: dict[str, Any] = {}
            if self.target is not None:
                options["target_ratio"] = self.target
            if self.strategy is not None:
                options["strategy"] = self.strategy
            self._compactor = synopsis.Compactor(
                context_window=window,
                model="gpt-4o",
                summarizer="rules",
                store="memory",
                # the summary names the session: the same id for every strategy, so that
                # none is charged more tokens for its name
                session_id=f"{self.session}-{window}-{self.target}",
                **options,
            )
        return self._compactor

    def native(self, items: Items) -> Any:
        return list(items)

    def step(self, history: Any, budget: Budget) -> Any | None:
        result = self.compactor(budget.window).compact(history, format="openai")
        self.summaries += result.compacted and result.record is not None
        return list(result.messages) if result.compacted else None

    def items(self, history: Any) -> Items:
        return list(history)


def default_target() -> float:
    """synopsis's default ``target_ratio`` (0.5, where compactions landed before the option
    existed, for a synopsis without it)."""
    import synopsis  # noqa: PLC0415

    probe = synopsis.Compactor(context_window=32_000, summarizer="rules")
    return float(getattr(probe.setup, "target_ratio", 0.5))


def default_strategy() -> str | None:
    """synopsis's default ``strategy``, named as :data:`STRATEGIES` names it (``None`` for a
    synopsis without the option)."""
    import synopsis  # noqa: PLC0415

    probe = synopsis.Compactor(context_window=32_000, summarizer="rules")
    found = getattr(probe.settings, "strategy", None)
    return None if found is None else "+".join(found)


# -- the run ----------------------------------------------------------------------------------


def sessions_of(transcripts: dict[str, Items]) -> list[Session]:
    observed = observation_sessions()
    return [
        Session.of(name, items, observations_in_user_turns=name in observed)
        for name, items in transcripts.items()
    ]


def peer_budget(window: int, system_tokens: int) -> Budget:
    return Budget(
        trigger=int(TRIGGER_SHARE * window),
        keep=max(1, int(PEER_LANDING * window) - system_tokens),
        window=window,
    )


def _variant(
    make: Callable[[Session], System],
    sessions: Sequence[Session],
    window: int,
    label: str,
) -> dict[str, Any]:
    total = Tally()
    per: dict[str, Any] = {}
    raised: dict[str, str] = {}
    for session in sessions:
        system = make(session)
        try:
            tally = replay_session(system, session, peer_budget(window, session.system_tokens()))
        except Exception as error:  # counted, not hidden: the session is left out of the totals
            raised[session.name] = f"{type(error).__name__}: {error}"[:300]
            continue
        per[session.name] = tally.as_json()
        total.merge(tally)
    return {"label": label, "totals": total.as_json(), "sessions": per, "raised": raised}


def _synopsis_at(
    target: float | None, strategy: Sequence[str] | None = None
) -> Callable[[Session], System]:
    """A fresh synopsis per session (its memory store is the session's)."""

    def make(session: Session) -> System:
        return SynopsisReplay(session.name, target, strategy)

    return make


def _always(peer: System) -> Callable[[Session], System]:
    """The same peer for every session: it keeps nothing between histories it did not make."""

    def make(session: Session) -> System:
        del session
        return peer

    return make


def run(
    peers: Sequence[System],
    transcripts: dict[str, Items],
    progress: Callable[[str], None],
    *,
    windows: Sequence[int] = WINDOWS,
    targets: Sequence[float] = TARGETS,
    strategies: Sequence[str] = (),
) -> dict[str, Any]:
    """Every transcript replayed at every window through synopsis (its default, then each
    target, then each of ``strategies`` at its default target: ``clear``, ``summarize``,
    ``clear+summarize``) and through each peer (``peers``: their non-LLM systems)."""
    sessions = sessions_of(transcripts)
    default = default_target()
    out: dict[str, Any] = {
        "default_strategy": default_strategy() if strategies else None,
        "windows": list(windows),
        "trigger_share": TRIGGER_SHARE,
        "peer_landing": PEER_LANDING,
        "default_target": default,
        "targets": sorted({*targets, default}),
        "goals": {str(w): g for w, g in GOALS.items()},
        "sessions": [s.name for s in sessions],
        "first_requests": {s.name: s.first_request for s in sessions},
        "constraints_stated": {s.name: sum(map(len, s.stated.values())) for s in sessions},
        "by_window": {},
    }
    synopsis_label = f"synopsis {version('synopsis')} Compactor"
    for window in windows:
        trigger = int(TRIGGER_SHARE * window)
        fit, left_out = [], {}
        for s in sessions:
            prompt = s.system_tokens()
            if prompt > trigger:
                left_out[s.name] = (
                    f"system prompt of {prompt:,} tokens, over the {trigger:,}-token trigger"
                )
            else:
                fit.append(s)
        variants: dict[str, Any] = {}
        for target in out["targets"]:
            started = time.perf_counter()
            chosen = None if target == default else target
            key = f"synopsis@{target:g}"
            variants[key] = _variant(
                _synopsis_at(chosen),
                fit,
                window,
                synopsis_label,
            )
            variants[key].update(system="synopsis", target=target, default=chosen is None)
            progress(
                f"replay-retention {window:,}: {key} done in {time.perf_counter() - started:.0f} s"
            )
        for strategy in strategies:
            started = time.perf_counter()
            key = f"synopsis:{strategy}"
            variants[key] = _variant(
                _synopsis_at(None, strategy.split("+")),
                fit,
                window,
                f"{synopsis_label}, strategy {strategy}",
            )
            variants[key].update(system="synopsis", target=default, default=False)
            variants[key]["strategy"] = strategy
            progress(
                f"replay-retention {window:,}: {key} done in {time.perf_counter() - started:.0f} s"
            )
        for peer in peers:
            started = time.perf_counter()
            variants[peer.name] = _variant(_always(peer), fit, window, peer.label)
            variants[peer.name].update(system=peer.name, target=None, default=False)
            progress(
                f"replay-retention {window:,}: {peer.name} done in "
                f"{time.perf_counter() - started:.0f} s"
            )
        whole = [uncompacted(s.items, window) for s in fit]
        out["by_window"][str(window)] = {
            "sessions": [s.name for s in fit],
            "left_out": left_out,
            "variants": variants,
            "uncompacted": {"tokens_sent": sum(w["tokens_sent"] for w in whole), **merged(whole)},
        }
    return out


# -- what the report reads --------------------------------------------------------------------


def share(counts: Sequence[int]) -> float | None:
    kept, found = counts
    return kept / found if found else None


def retained(totals: dict[str, Any]) -> float | None:
    """The trade-off's retention: paths and request first lines of the removed parts, pooled."""
    return share(
        [totals["paths"][0] + totals["requests"][0], totals["paths"][1] + totals["requests"][1]]
    )


def kept_share(totals: dict[str, Any]) -> float:
    """:func:`retained`, 100% for a system that never removed anything."""
    value = retained(totals)
    return 1.0 if value is None else value


def bettering(block: dict[str, Any]) -> dict[str, list[float]]:
    """For each peer (by label), synopsis's targets that keep more than it for no more tokens
    sent."""
    ours = [
        v for v in block["variants"].values() if v["system"] == "synopsis" and not v.get("strategy")
    ]
    out: dict[str, list[float]] = {}
    for peer in block["variants"].values():
        if peer["system"] == "synopsis":
            continue
        theirs, cost = kept_share(peer["totals"]), peer["totals"]["tokens_sent"]
        out[peer["label"]] = sorted(
            v["target"]
            for v in ours
            if kept_share(v["totals"]) > theirs and v["totals"]["tokens_sent"] <= cost
        )
    return out


def verdicts(block: dict[str, Any], window: int) -> list[tuple[str, bool | None]]:
    """The issue's targets for synopsis's default at ``window``: ``(line, met)``; ``met`` is
    ``None`` where nothing was measured (no compaction removed any path, say)."""
    ours = next(v for v in block["variants"].values() if v.get("default"))
    t = ours["totals"]
    goal = GOALS.get(window)
    out: list[tuple[str, bool | None]] = []
    for measure_name, what in (("paths", "file paths"), ("requests", "request first lines")):
        value = share(t[measure_name])
        if goal is None:
            continue
        met = None if value is None else value >= goal
        out.append(
            (
                f"{window // 1000}k: {_pct(value)} of the removed part's {what} kept "
                f"(target ≥ {goal:.0%})",
                met,
            )
        )
    first = share(t["first"])
    out.append(
        (
            f"{window // 1000}k: the first request in {_pct(first)} of compactions "
            f"({t['first'][0]} of {t['first'][1]}; target 100%)",
            None if first is None else first == 1.0,
        )
    )
    stated = share(t["constraints"])
    out.append(
        (
            f"{window // 1000}k: stated constraints present in {_pct(stated)} of checks "
            f"({t['constraints'][0]} of {t['constraints'][1]}; target 100%)",
            None if stated is None else stated == 1.0,
        )
    )
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


COSTS = ("tokens", *PROVIDERS)
"""What :func:`beaten` weighs retention against: tokens sent, and the input priced with each
provider's prefix cache."""


def cost_of(totals: dict[str, Any], measure: str) -> float:
    """``tokens``: the tokens sent; a provider's name: the input cost at its prices."""
    if measure == "tokens":
        return float(totals["tokens_sent"])
    return float(totals["cost"][measure]["usd"])


def configurations(block: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The variants a default is chosen among, by key: synopsis's default and each strategy
    (at the default target), and every peer; the other targets are not configurations of
    their own here."""
    return {
        key: v
        for key, v in block["variants"].items()
        if v["system"] != "synopsis" or v.get("default") or v.get("strategy")
    }


def beaten(block: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """For each configuration, by key: the others that keep at least as much (paths and
    request first lines, :func:`kept_share`) for no more cost, and more or for less, by each of
    :data:`COSTS` (``{key: {other: [measures]}}``; empty for one nothing beats). Results from
    before the costs were measured are weighed by tokens sent only."""
    found = configurations(block)
    out: dict[str, dict[str, list[str]]] = {}
    for key, v in found.items():
        mine = kept_share(v["totals"])
        out[key] = {}
        for other, w in found.items():
            if other == key:
                continue
            theirs = kept_share(w["totals"])
            for measure in COSTS:
                if measure != "tokens" and not ("cost" in v["totals"] and "cost" in w["totals"]):
                    continue
                mine_cost, their_cost = cost_of(v["totals"], measure), cost_of(w["totals"], measure)
                if (
                    theirs >= mine
                    and their_cost <= mine_cost
                    and (theirs > mine or their_cost < mine_cost)
                ):
                    out[key].setdefault(other, []).append(measure)
    return out
