"""The pure planning core: when to compact (triggers and the governor), where to cut (the safe
split and keep policies), and the cheap reductions that run first. No I/O anywhere here."""

from __future__ import annotations

from synopsis.planning.clearing import CLEARED_MARKER, Cleared, Clearing, clear_outputs
from synopsis.planning.governor import (
    LOWEST_LANDING,
    Code,
    Decision,
    GovernorConfig,
    GovernorState,
    check_savings,
    decide,
    record_compaction,
    record_failure,
    refill_breaker,
    turn_key,
)
from synopsis.planning.passes import PassResult, PassStep, iter_passes, run_passes
from synopsis.planning.reductions import (
    Oversized,
    Reduced,
    Reduction,
    Reductions,
    TruncateArgs,
    reduce,
)
from synopsis.planning.split import Keep, Protect, SplitPlan, plan_split
from synopsis.planning.triggers import Measure, Trigger, measure_history
from synopsis.planning.units import Structure, analyze

__all__ = [
    "CLEARED_MARKER",
    "LOWEST_LANDING",
    "Cleared",
    "Clearing",
    "Code",
    "Decision",
    "GovernorConfig",
    "GovernorState",
    "Keep",
    "Measure",
    "Oversized",
    "PassResult",
    "PassStep",
    "Protect",
    "Reduced",
    "Reduction",
    "Reductions",
    "SplitPlan",
    "Structure",
    "Trigger",
    "TruncateArgs",
    "analyze",
    "check_savings",
    "clear_outputs",
    "decide",
    "iter_passes",
    "measure_history",
    "plan_split",
    "record_compaction",
    "record_failure",
    "reduce",
    "refill_breaker",
    "run_passes",
    "turn_key",
]
