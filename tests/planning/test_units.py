"""The shape a cut must respect, as ``analyze`` reports it: how many units each boundary would
break, the unit around each message, which messages tie a unit together, and the last model
turn whose calls may still be running."""

from __future__ import annotations

from synopsis.planning import analyze
from tests.planning.helpers import calls, reasoning, result, say, user


def units(structure) -> list[list[int]]:
    return [list(structure.unit(i)) for i in range(structure.length)]


def test_each_boundary_counts_the_units_it_would_break() -> None:
    # Two calls answered at 2 and 3 cross boundaries 2 and 3; the model's turn at 4-5 crosses 5.
    msgs = [user("t"), calls("a", "b"), result("a"), result("b"), say("x"), say("y"), user("z")]
    s = analyze(msgs)
    assert s.crossing == (0, 0, 2, 1, 0, 1, 0, 0)
    assert len(s.crossing) == len(msgs) + 1
    assert units(s) == [[0], [1, 2, 3], [1, 2, 3], [1, 2, 3], [4, 5], [4, 5], [6]]
    assert s.tied == {1, 2, 3, 4, 5}


def test_a_message_alone_is_a_unit_of_its_own_at_either_end() -> None:
    s = analyze([user("t"), calls("a"), result("a"), say("done")])
    assert units(s) == [[0], [1, 2], [1, 2], [3]]
    assert s.unit_start == (0, 1, 1, 3)
    assert s.unit_end == (1, 3, 3, 4)


def test_a_running_turn_may_start_the_history() -> None:
    assert analyze([calls("a")]).running == 0
    assert analyze([calls("a", "b"), result("a")]).running == 0
    started = analyze([reasoning(), calls("a")])
    assert started.running == 0
    assert started.tied == {0, 1}
    assert units(started) == [[0, 1], [0, 1]]


def test_an_unanswered_call_earlier_does_not_make_the_last_turn_run() -> None:
    # The call at 1 was never answered; the last turn's own call was: nothing is running.
    s = analyze([user("t"), calls("x"), user("u"), calls("y"), result("y")])
    assert s.running is None
    assert s.dangling == (1,)
    assert s.max_boundary == 5
