"""Two external yardsticks from PyPI, run on synopsis: tessera-transcript and the compaction
conformance kit. Both are imported lazily, so this module imports without them.

tessera-transcript 0.1.0 (import ``tessera``)
    ``tessera.inspect(transcript, adapter="openai") -> Report`` finds every pairing defect
    without changing anything. ``Report.is_valid`` is False when any finding is ``FATAL``
    (``dangling_call``, ``orphaned_result``, ``result_before_call``, ``empty_assistant_turn``,
    ``duplicate_call_id``, ``missing_call_id``); ``duplicate_result`` is only ``WASTEFUL``.
    The adapter is named, not autodetected, because every history here is OpenAI chat
    completions. ``inspect`` takes no option besides ``adapter``: there is no way to allow an
    unanswered tail (see :func:`tessera_pairing`).

compaction-conformance-kit 0.8.0 (import ``compaction_kit``)
    A compactor is any object with a ``name`` and
    ``compact(turns, round_num=1, budget_chars=None) -> CompactedContext``, where ``turns`` are
    the kit's ``Turn(role, text)`` and the context is the text an agent would see.
    ``run_conformance(session, compactor, rounds, canaries, budget_fraction=...)`` compacts
    ``rounds`` times (round k+1 gets ``[Turn("system", text of round k)]``) and probes 20
    planted canaries after each round by exact tokens (four each of ``safety_rule``,
    ``hard_constraint``, ``fact``, ``goal_state``, ``user_preference``); ``build_report`` turns
    the run into per-type curves, a round-1 verdict (FLAG below 50%, SILENT above 90%) and a
    cliff round (the first round a type falls below 50%). Budgets are output caps in
    characters, a fraction of the original transcript fixed across rounds;
    ``compaction_kit.benchmark.DEFAULT_BUDGETS`` is 10%, 20%, 30%. ``run_budget_benchmark``
    is the kit's leaderboard at those budgets over its randomized and semantic corpora.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import synopsis

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

TESSERA_DIST = "tessera-transcript"
KIT_DIST = "compaction-conformance-kit"
KIT_BASELINE = "lossy-truncation"
"""The kit's naive baseline (keep the last 30% of the text): the denominator of the ratios."""
KIT_COMPARED = (KIT_BASELINE, "naive-summary", "update-aware-checklist", "semantic-checklist")
"""Kit compactors run beside synopsis: its two naive baselines and its two best references.
The references find canaries by the markers they are planted with (``SAFETY RULE:``...), so
they are the kit's ceiling rather than peers."""
KIT_ROUNDS = 5
"""Rounds of compaction per kit run (each round compacts the previous round's output): the
issue's five."""
FIVE_ROUNDS = {0.1: 0.5, 0.2: 0.9, 0.3: 1.0}
"""The issue's targets: canary survival after the last round at each budget, within budget."""
HELD = ("safety_rule", "hard_constraint")
"""Canary types that must survive at every budget that can hold their statements."""
_WIDEN = 1.25
_MAX_WIDENINGS = 40


def tessera_version() -> str:
    return version(TESSERA_DIST)


def kit_version() -> str:
    return version(KIT_DIST)


# -- tessera-transcript -----------------------------------------------------------------------


def tessera_pairing(items: list[dict[str, Any]]) -> tuple[bool, str]:
    """tessera-transcript's pairing check on one OpenAI chat-completions history.

    Returns ``(passed, reason)``: ``passed`` is tessera's own verdict, ``Report.is_valid`` of
    ``tessera.inspect(items, adapter="openai")``, never changed here. ``reason`` is one line:
    empty when tessera found nothing, ``"warning: ..."`` when it passed with only a
    ``WASTEFUL`` finding (a duplicate result), else the first fatal finding as tessera words it,
    how many more there are, and in brackets what kind of failure it is:

    * ``[pending tail]``: every fatal finding is a ``dangling_call`` of the last message, an
      assistant turn whose calls have no results yet (a run cut mid-call);
    * ``[partial results]``: the same, but some results of that last assistant turn's
      parallel calls have arrived and the history stops between them;
    * ``[reused ids]``: ``duplicate_call_id``: the history gives a new call the id of an
      earlier, answered one, as recorded sessions do;
    * ``[defect]``: anything else (a dangling call inside the history, an orphaned result, an
      empty assistant turn...), joined with ``+`` when several kinds occur.

    How tessera treats a pending tail: as ``FATAL dangling_call`` ("the provider will reject
    this request"), so a history that ends on an assistant message whose tool calls have no
    results fails. ``inspect`` has no option to allow it (its only option is ``adapter``), and
    the CLI ``tessera check`` has none either; ``tessera.repair`` would answer the call with a
    synthesised "did not complete" result, which changes the history. So such histories
    **fail** here, and the bracket says why: a caller that wants to discount them must do so
    visibly, from the bracket.

    Other behaviour of tessera's OpenAI check worth knowing when reading its verdicts:

    * it pairs by id over the whole history: a reused id is fatal, and a pending call whose id
      an earlier call already used counts as answered by that earlier result, so a pending tail
      can hide behind ``[reused ids]``;
    * it checks order (result after call) but not adjacency: a user message between an
      assistant's tool calls and their results passes tessera, though OpenAI rejects it;
    * an assistant message whose ``content`` is a list of parts and has no tool calls is read
      as empty (``empty_assistant_turn``), since only string content counts as text.
    """
    import tessera  # noqa: PLC0415 - optional: only the benchmark environment has it

    try:
        report = tessera.inspect(items, adapter="openai")
    except tessera.MalformedTranscriptError as error:
        return False, f"not a transcript: {error}"
    if report.is_valid:
        if report.findings:
            return True, f"warning: {report.findings[0]}"
        return True, ""
    fatal = report.fatal
    more = f" (+{len(fatal) - 1} more)" if len(fatal) > 1 else ""
    return False, f"[{_failure_kind(items, fatal)}] {fatal[0]}{more}"


def _failure_kind(items: list[dict[str, Any]], fatal: Sequence[Any]) -> str:
    """The bracket of :func:`tessera_pairing`: what kind of fatal findings these are."""
    calling = [i for i, item in enumerate(items) if item.get("tool_calls")]
    last = calling[-1] if calling else None
    only_results_after = last is not None and all(
        item.get("role") == "tool" for item in items[last + 1 :]
    )
    kinds: list[str] = []
    for finding in fatal:
        defect = finding.defect.value
        if defect == "dangling_call" and finding.message_index == last and only_results_after:
            kind = "pending tail" if last == len(items) - 1 else "partial results"
        elif defect == "duplicate_call_id":
            kind = "reused ids"
        else:
            kind = "defect"
        if kind not in kinds:
            kinds.append(kind)
    return "+".join(kinds)


# -- compaction-conformance-kit ---------------------------------------------------------------


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _render(messages: Sequence[dict[str, Any]]) -> str:
    """Messages as the kit writes turns (``[role] text`` per line), so sizes compare."""
    return "\n".join(f"[{m.get('role')}] {_text(m.get('content'))}" for m in messages)


@contextmanager
def _quiet_synopsis() -> Iterator[None]:
    """Silence synopsis's warning log while windows are widened (each failed try logs one)."""
    logger = logging.getLogger("synopsis.events")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class SynopsisKitCompactor:
    """synopsis behind the kit's ``Compactor`` protocol: one ``synopsis.Compactor`` per kit
    run, its options fixed at round 1 as an agent's are, with the default rule-based
    summarizer (offline, no key), called with ``force=True`` and ``format="openai"``.

    Conversion: each kit ``Turn`` becomes an OpenAI chat message ``{"role", "content"}`` (a
    ``tool`` turn, which has no call id, becomes a user message); the output messages are
    rendered back as the kit renders turns, ``[role] text`` per line.

    Budget mapping, from the kit's ``budget_chars`` (a cap on the output's characters, the same
    every round): the cap in tokens is ``B = budget_chars * tokens / chars`` of the round-1
    input (synopsis's own counter over the messages, the kit's text for the characters). Then
    ``context_window = ceil(B / 0.7)``, ``trigger = Trigger.tokens(B)``,
    ``keep = Keep.tokens(B // 16)``, ``min_summary_tokens = B // 2`` (between 64 and the
    default 256) and ``target_ratio=0.7``: the kit's budget is where a compaction must land,
    and the target is how a synopsis user says where one lands (with the trigger and the
    reset line at ``B``, 0.7 puts it at 0.9 of ``B``, a target being a little below that
    line; the default 0.5 would land at 0.71 of it, leaving the rest of the budget unused).
    The tail and the floor are what a user with a window of a few hundred tokens sets: the
    newest turn kept verbatim (the tail never goes below it), and a summary allowed under
    the default floor, which alone would be more than ``B`` at 10%. The kit's own
    compactors drop their recent-activity tail first when over budget. When synopsis refuses
    with ``BudgetUnreachableError`` (what it must keep, the system prompt, the first user
    turn, the newest turn and a summary of at least its floor, does not fit), the window is
    widened by 25% until it succeeds;
    ``log`` says so, the output is over the cap and the kit marks the round non-compliant.
    Without a budget (the kit's unbudgeted run), a forcing budget like the validity check's:
    window four times the round-1 input's tokens, trigger at half of them, keep a fifth.

    Rounds: the kit feeds round k's text back as one system turn. synopsis never summarizes a
    system message, so that turn would come back untouched; instead, when the turn is exactly
    this compactor's last output, the messages behind that text are compacted again (what an
    agent re-compacting its own history does). ``log`` keeps one entry per round.
    """

    name = "synopsis"

    def __init__(self) -> None:
        self._last: tuple[str, list[dict[str, Any]]] | None = None
        self._options: dict[str, Any] = {}
        self._compactor: synopsis.Compactor | None = None
        self.log: list[dict[str, Any]] = []

    def _configure(self, messages: list[dict[str, Any]], chars: int, budget: int | None) -> None:
        tokens = synopsis.count_tokens(messages, format="openai")
        if budget is None:
            cap = None
            window, trigger, keep = max(4 * tokens, 64), max(1, tokens // 2), max(1, tokens // 5)
        else:
            cap = max(1, budget * tokens // max(1, chars))
            window, trigger, keep = max(2, math.ceil(cap / 0.7)), cap, max(1, cap // 16)
        self._options = {
            "budget_tokens": cap,
            "window": window,
            "trigger": trigger,
            "keep": keep,
            "target_ratio": 0.7 if cap is not None else 0.5,
            "min_summary": max(64, min(256, cap // 2)) if cap is not None else 256,
        }
        self._compactor = None

    def _build(self) -> synopsis.Compactor:
        o = self._options
        return synopsis.Compactor(
            context_window=o["window"],
            trigger=synopsis.Trigger.tokens(o["trigger"]),
            keep=synopsis.Keep.tokens(o["keep"]),
            target_ratio=o["target_ratio"],
            min_summary_tokens=o["min_summary"],
        )

    def compact(self, turns: list[Any], round_num: int = 1, budget_chars: int | None = None) -> Any:
        """One round of the kit's protocol; returns a ``compaction_kit.CompactedContext``."""
        from compaction_kit import CompactedContext  # noqa: PLC0415 - optional dependency

        if self._last is not None and len(turns) == 1 and turns[0].text == self._last[0]:
            messages = self._last[1]
        else:  # a new run of the kit: options from this input and budget
            messages = [
                {"role": "user" if t.role == "tool" else t.role, "content": t.text} for t in turns
            ]
            chars = len("\n".join(f"[{t.role}] {t.text}" for t in turns))
            self._configure(messages, chars, budget_chars)
        widened = 0
        with _quiet_synopsis():
            while True:
                if self._compactor is None:
                    self._compactor = self._build()
                try:
                    result = self._compactor.compact(messages, force=True, format="openai")
                    break
                except synopsis.BudgetUnreachableError:
                    if widened >= _MAX_WIDENINGS:
                        raise
                    self._options["window"] = math.ceil(self._options["window"] * _WIDEN)
                    self._compactor, widened = None, widened + 1
        text = _render(result.messages)
        self._last = (text, list(result.messages))
        self.log.append(
            {
                "round": round_num,
                "budget_tokens": self._options["budget_tokens"],
                "context_window": self._options["window"],
                "trigger_tokens": self._options["trigger"],
                "keep_tokens": self._options["keep"],
                "widened": widened,
                "code": result.code,
                "tokens_before": result.tokens_before,
                "tokens_after": result.tokens_after,
            }
        )
        return CompactedContext(text=text, compactor_name=self.name, round_num=round_num)


def _kit_factories(names: Sequence[str]) -> dict[str, Callable[[], Any]]:
    from compaction_kit.cli import COMPACTORS  # noqa: PLC0415 - the kit's registry of its own

    factories: dict[str, Callable[[], Any]] = {"synopsis": SynopsisKitCompactor}
    for name in names:
        factories[name] = COMPACTORS[name]
    return factories


def _seeded_run(factory: Callable[[], Any], rounds: int, budget: float | None) -> dict[str, Any]:
    """One compactor on the kit's seeded session at one budget: curves, verdicts, cliffs."""
    from compaction_kit import build_report, build_seeded_session, seeded_canaries  # noqa: PLC0415
    from compaction_kit.runner import run_conformance  # noqa: PLC0415

    session, canaries = build_seeded_session(), seeded_canaries()
    compactor = factory()
    run = run_conformance(
        session, compactor, rounds=rounds, canaries=canaries, budget_fraction=budget
    )
    report = build_report(run, canaries=canaries, session=session)
    final = run.rounds[-1]
    out: dict[str, Any] = {
        "budget_chars": final.budget_chars,
        "compliant": all(r.within_budget for r in run.rounds),
        "output_chars": [r.output_chars for r in run.rounds],
        "overall_round1": sum(run.rounds[0].survived.values()) / len(canaries),
        "overall_final": sum(final.survived.values()) / len(canaries),
        "by_type": {
            f.canary_type: {
                "round1": f.round1_survival,
                "final": f.final_survival,
                "curve": f.curve,
                "verdict": f.verdict,
                "cliff_round": f.cliff_round,
            }
            for f in report.findings
        },
        "flagged": report.flagged_types,
        "late_cliffs": {f.canary_type: f.cliff_round for f in report.findings if f.has_late_cliff},
        "lost": sorted(d.canary_id for d in report.diagnoses if d.lost),
    }
    if isinstance(compactor, SynopsisKitCompactor):
        out["synopsis_rounds"] = compactor.log
    return out


def _ratio(ours: float, base: float) -> float | None:
    return round(ours / base, 3) if base else None


def conformance_canaries(
    *,
    budgets: Sequence[float] | None = None,
    rounds: int = KIT_ROUNDS,
    seeds: Sequence[int] = (1, 2, 3, 4),
    compared: Sequence[str] = KIT_COMPARED,
    leaderboard: bool = True,
) -> dict[str, Any]:
    """The conformance kit's canary survival for synopsis (see :class:`SynopsisKitCompactor`
    for how it is plugged in and how budgets map), next to the kit's own compactors.

    Two parts, both at the kit's default budgets (``DEFAULT_BUDGETS``: 10%, 20%, 30% of the
    original transcript in characters, fixed across rounds) and its default 5 rounds:

    * ``seeded``: the kit's report (``run_conformance`` + ``build_report``, what
      ``compaction-kit check`` runs) on its seeded session (20 canaries, 4 per type): per
      compactor, for the unbudgeted run (``"none"``) and each budget, per-type survival after
      round 1 and after the last round, the curve, the round-1 verdict and cliff round,
      overall survival, budget compliance, the canaries lost; for synopsis also the window it
      used each round.
    * ``leaderboard``: ``run_budget_benchmark`` with the kit's defaults (seeds 1-4 of the
      randomized corpus and of both semantic corpora): overall final survival, per-type final
      medians, compliance, semantic resolution and rank per budget.

    ``versus_baseline`` compares synopsis's overall survival on the seeded session with the
    kit's naive baseline (``lossy-truncation``), after round 1 and after the last round: the
    ratio (``None`` where the baseline holds nothing, as it does after 5 rounds) and the
    difference in percentage points. The whole call takes 8-15 s (the seeded part 1-2 s);
    ``leaderboard=False`` skips the second part.
    """
    from compaction_kit.benchmark import DEFAULT_BUDGETS, run_budget_benchmark  # noqa: PLC0415

    started = time.perf_counter()
    fractions = [float(b) for b in (DEFAULT_BUDGETS if budgets is None else budgets)]
    factories = _kit_factories(compared)
    seeded: dict[str, dict[str, Any]] = {}
    for name, factory in factories.items():
        seeded[name] = {
            ("none" if b is None else f"{b:g}"): _seeded_run(factory, rounds, b)
            for b in (None, *fractions)
        }
    out: dict[str, Any] = {
        "kit": KIT_DIST,
        "kit_version": kit_version(),
        "synopsis_version": synopsis.__version__,
        "session": "seeded (build_seeded_session): 20 canaries, 4 per type",
        "rounds": rounds,
        "budgets": fractions,
        "budget_unit": "characters of the compacted text, fraction of the original transcript",
        "budget_mapping": (
            "one synopsis.Compactor per run, rules summarizer, force=True; B = budget_chars * "
            "tokens / chars of the round-1 input, context_window = ceil(B / 0.7), trigger = "
            "Trigger.tokens(B), keep = Keep.tokens(B // 16), min_summary_tokens = B // 2 "
            "within [64, 256], target_ratio = 0.7 (a compaction lands at 0.9 B), the window "
            "widened by 25% while "
            "synopsis raises BudgetUnreachableError; unbudgeted: window 4x the input's tokens, "
            "trigger half, keep a fifth; each round re-compacts synopsis's own output messages"
        ),
        "baseline": KIT_BASELINE,
        "compactors": list(factories),
        "seeded": seeded,
    }
    if KIT_BASELINE in seeded:
        versus: dict[str, Any] = {}
        for budget, ours in seeded["synopsis"].items():
            base = seeded[KIT_BASELINE][budget]
            versus[budget] = {
                when: {
                    "ratio": _ratio(ours[f"overall_{when}"], base[f"overall_{when}"]),
                    "points": round(100 * (ours[f"overall_{when}"] - base[f"overall_{when}"])),
                    "ratio_by_type": {
                        t: _ratio(v[when], base["by_type"][t][when])
                        for t, v in ours["by_type"].items()
                    },
                }
                for when in ("round1", "final")
            }
        out["versus_baseline"] = versus
    if leaderboard:
        board = run_budget_benchmark(factories, budgets=fractions, seeds=seeds, rounds=rounds)
        out["leaderboard"] = {
            "seeds": board["seeds"],
            "entries": [
                {
                    "compactor": e["compactor"],
                    "budget": e["budget_fraction"],
                    "rank": e["rank"],
                    "compliant": e["budget_compliant"],
                    "max_output_to_budget": e["max_output_to_budget"],
                    "overall_final": e["randomized"]["overall_final_survival"],
                    "final_median_by_type": e["randomized"]["final_median_by_type"],
                    "semantic_resolved": e["semantic"]["resolved_rate"],
                    "distinct_pairs": e["semantic"]["distinct_pair_rate"],
                    "seconds": e["runtime_seconds"],
                }
                for e in board["entries"]
            ],
        }
    from compaction_kit import seeded_canaries  # noqa: PLC0415

    out["hold_chars"] = len("\n".join(c.content for c in seeded_canaries() if c.type.value in HELD))
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def conformance_lines(result: dict[str, Any]) -> list[str]:
    """Markdown lines for :func:`conformance_canaries`'s result: survival after round 1 and
    after the last round on the seeded session, per type and budget, synopsis beside the kit's
    compactors, then synopsis's places on the kit's leaderboard."""
    types = list(next(iter(result["seeded"]["synopsis"].values()))["by_type"])
    caps = ", ".join(_pct(b) for b in result["budgets"])
    lines = [
        f"- {result['kit']} {result['kit_version']}: canary survival after round 1 → after "
        f"round {result['rounds']} on its seeded session, output capped at {caps} of the "
        "transcript's characters (the kit's default budgets; `none` is its unbudgeted run). "
        f"synopsis: {result['budget_mapping']}.",
        "",
        "| compactor | budget | within budget | overall | " + " | ".join(types) + " | cliffs |",
        "|---|---|---|---|" + "---|" * len(types) + "---|",
    ]
    for name, runs in result["seeded"].items():
        for budget, run in runs.items():
            cliffs = ", ".join(
                f"{t} r{v['cliff_round']}" for t, v in run["by_type"].items() if v["cliff_round"]
            )
            cells = " | ".join(
                f"{_pct(run['by_type'][t]['round1'])} → {_pct(run['by_type'][t]['final'])}"
                for t in types
            )
            budget_cell = budget if budget == "none" else _pct(float(budget))
            lines.append(
                f"| {name} | {budget_cell} | {'yes' if run['compliant'] else 'no'} | "
                f"{_pct(run['overall_round1'])} → {_pct(run['overall_final'])} | {cells} | "
                f"{cliffs or 'none'} |"
            )
    board = result.get("leaderboard")
    if board:
        ours = [e for e in board["entries"] if e["compactor"] == "synopsis"]
        lines += [
            "",
            f"- The kit's leaderboard (randomized and semantic corpora, seeds "
            f"{', '.join(map(str, board['seeds']))}): synopsis "
            + "; ".join(
                f"at {_pct(e['budget'])} ranks {e['rank']} of {len(result['compactors'])}, "
                f"{_pct(e['overall_final'])} survival, "
                f"{'within budget' if e['compliant'] else 'over budget'}"
                for e in ours
            )
            + ".",
        ]
    return lines


def five_round_verdicts(result: dict[str, Any], name: str = "synopsis") -> list[tuple[str, bool]]:
    """The issue's targets for ``name`` on the kit's seeded session after its last round:
    canary survival at each budget of :data:`FIVE_ROUNDS`, within budget every round; and
    every safety rule and hard constraint at every budget that can hold them (whose cap in
    characters is at least their statements, one per line: ``hold_chars``)."""
    runs = result["seeded"][name]
    rounds = result["rounds"]
    out: list[tuple[str, bool]] = []
    for budget, goal in FIVE_ROUNDS.items():
        run = runs.get(f"{budget:g}")
        if run is None:
            continue
        value = run["overall_final"]
        within = run["compliant"]
        out.append(
            (
                f"{budget:.0%} budget: {value:.0%} of canaries after round {rounds}, "
                f"{'within budget' if within else 'over budget'} "
                f"(target {'' if goal == 1 else '≥ '}{goal:.0%}, within budget)",
                within and value >= goal,
            )
        )
    hold = result.get("hold_chars", 0)
    able = [
        (b, run) for b, run in runs.items() if b != "none" and (run["budget_chars"] or 0) >= hold
    ]
    kept = [
        (b, all(run["by_type"][t]["final"] == 1.0 for t in HELD if t in run["by_type"]))
        for b, run in able
    ]
    lost = [f"{float(b):.0%}" for b, ok in kept if not ok]
    out.append(
        (
            "every safety rule and hard constraint after round "
            f"{rounds} at every budget that can hold them ({hold:,} characters: "
            + ", ".join(f"{float(b):.0%}" for b, _ in able)
            + ")"
            + (f"; lost at {', '.join(lost)}" if lost else ""),
            bool(kept) and not lost,
        )
    )
    return out


def five_round_lines(result: dict[str, Any]) -> list[str]:
    """The issue's five-round view of the kit's seeded runs: per compactor and budget, canary,
    safety-rule and hard-constraint survival after the last round and budget compliance, then
    synopsis's verdict against each target."""
    rounds = result["rounds"]
    lines = [
        f"- {result['kit']} after {rounds} rounds (each compacting the last), the issue's "
        "targets: at least 90% of canaries at a 20% budget and 100% at 30%, within budget at "
        "10% with at least 50%, every safety rule and hard constraint at every budget that "
        "can hold them.",
        "",
        "| compactor | budget | within budget | canaries | safety rules | hard constraints |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, runs in result["seeded"].items():
        for budget, run in runs.items():
            if budget == "none":
                continue
            by = run["by_type"]
            lines.append(
                f"| {name} | {_pct(float(budget))} | {'yes' if run['compliant'] else 'no'} "
                f"| {_pct(run['overall_final'])} | {_pct(by['safety_rule']['final'])} "
                f"| {_pct(by['hard_constraint']['final'])} |"
            )
    lines.append("")
    for line, met in five_round_verdicts(result):
        lines.append(f"- synopsis, {line}: **{'met' if met else 'NOT met'}**")
    return lines
