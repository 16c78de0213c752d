"""What the four adapters share (``synopsis.adapters._common``): one bound on the conversations
they keep, the least recently used dropped first; one refusal of a Compactor given with
options, in one sentence; one aligner; and every option of Settings passed on unchanged, so
that a new option needs no adapter change."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synopsis import Compactor, Settings
from synopsis.adapters._common import CONVERSATIONS, Conversations, compactor_from, leading
from synopsis.adapters.adk import SynopsisCallback, SynopsisPlugin
from synopsis.adapters.agents import SynopsisInputFilter, SynopsisSession
from synopsis.adapters.langchain import SynopsisMiddleware, SynopsisRequestMiddleware
from synopsis.adapters.pydantic_ai import SynopsisCapability, SynopsisRequestCapability
from synopsis.errors import ConfigurationError
from tests.adapters.test_agents import ListSession
from tests.config.test_settings import SAMPLES

if TYPE_CHECKING:
    from collections.abc import Callable


def _session(**options: Any) -> SynopsisSession:
    return SynopsisSession(ListSession("s"), **options)


ADAPTERS: dict[str, tuple[type, Callable[..., Any]]] = {
    "langchain.SynopsisMiddleware": (SynopsisMiddleware, SynopsisMiddleware),
    "langchain.SynopsisRequestMiddleware": (SynopsisRequestMiddleware, SynopsisRequestMiddleware),
    "pydantic_ai.SynopsisCapability": (SynopsisCapability, SynopsisCapability),
    "pydantic_ai.SynopsisRequestCapability": (SynopsisRequestCapability, SynopsisRequestCapability),
    "adk.SynopsisCallback": (SynopsisCallback, SynopsisCallback),
    "adk.SynopsisPlugin": (SynopsisPlugin, SynopsisPlugin),
    "agents.SynopsisInputFilter": (SynopsisInputFilter, SynopsisInputFilter),
    "agents.SynopsisSession": (SynopsisSession, _session),
}
"""Every adapter object that runs a Compactor, and how a test makes one from options."""
KEEPING = [name for name in ADAPTERS if name != "agents.SynopsisSession"]
"""Those that serve many conversations (a session wraps one)."""


def make(name: str, **options: Any) -> Any:
    return ADAPTERS[name][1](**options)


# -- one refusal -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_compactor_and_options_are_refused_in_one_sentence(name: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make(name, compactor=Compactor(), model="gpt-4o", context_window=8_000)
    assert str(caught.value) == (
        "pass a Compactor or its options, not both (got compactor= and context_window, model)"
    )


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_compactor_is_taken_as_it_is(name: str) -> None:
    compactor = Compactor(model="gpt-4o")
    adapter = make(name, compactor=compactor)
    assert adapter.compactor is compactor
    assert compactor.remembered_sessions == Compactor.remembered_sessions  # left as it was
    with pytest.raises(ConfigurationError) as caught:
        make(name, compactor="gpt-4o")
    assert str(caught.value) == "compactor must be a synopsis.Compactor, got 'gpt-4o'"


# -- every option passed on --------------------------------------------------------------------


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_settings_option_reaches_the_settings_unchanged(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One non-default value for every option of Settings (the table the settings' own tests
    keep complete), given to the adapter by keyword, is the Compactor's setting."""
    monkeypatch.setenv(SAMPLES["api_key_env"][0], "sk-test")  # the sample names a variable
    options = {option: value for option, (value, _) in SAMPLES.items()}
    assert set(options) == set(Settings.model_fields)
    adapter = make(name, **options)
    assert adapter.compactor.settings == Settings(**options)


@pytest.mark.parametrize("name", ADAPTERS)
def test_no_adapter_lists_the_options_by_hand(name: str) -> None:
    """An adapter takes the options as ``**options`` and names none of them itself but the
    conversation's name (which it passes on when it is text), so a new option of Settings
    reaches every adapter as it is."""
    parameters = inspect.signature(ADAPTERS[name][0]).parameters
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    assert set(parameters) & set(Settings.model_fields) <= {"session_id"}


@pytest.mark.parametrize("name", ["pydantic_ai.SynopsisCapability", "agents.SynopsisInputFilter"])
def test_a_conversation_named_in_text_is_the_compactors_session(name: str) -> None:
    assert make(name, session_id="t1").compactor.settings.session_id == "t1"
    by_context = make(name, session_id=lambda context: "t1")
    assert by_context.compactor.settings.session_id is None


# -- one bound ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KEEPING)
def test_every_adapter_keeps_the_same_number_of_conversations(name: str) -> None:
    assert make(name).conversations == CONVERSATIONS == 32
    many = make(name, conversations=100)
    assert many.conversations == 100
    assert many.compactor.remembered_sessions == 100  # one fast path per conversation kept


@pytest.mark.parametrize("name", KEEPING)
@pytest.mark.parametrize(
    ("bound", "sentence"),
    [
        (0, "conversations must be at least 1, got 0"),
        (True, "conversations must be a whole number, got True"),
        ("3", "conversations must be a whole number, got '3'"),
    ],
)
def test_every_adapter_checks_the_bound_alike(name: str, bound: object, sentence: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make(name, conversations=bound)
    assert str(caught.value) == sentence


def test_the_bound_drops_the_conversation_used_least_recently() -> None:
    made: list[object] = []

    def fresh() -> object:
        made.append(object())
        return made[-1]

    kept = Conversations(2, fresh)
    a = kept.use("a")
    kept.use(None)
    assert kept.use("a") is a  # kept: used again, and now the most recent
    kept.use("c")
    assert list(kept) == ["a", "c"]  # None, used least recently, was dropped
    assert kept["a"] is a
    assert list(kept) == ["a", "c"]  # reading changes nothing
    assert kept.use(None) is not made[1]  # dropped: made anew
    assert (list(kept), len(kept), len(made)) == (["c", None], 2, 4)


@given(st.integers(1, 4), st.lists(st.sampled_from(["a", "b", "c", "d", "e", None])))
def test_the_conversations_kept_are_those_used_last(bound: int, uses: list[str | None]) -> None:
    kept: Conversations[object] = Conversations(bound, object)
    order: list[str | None] = []  # the model: least recently used first
    held: dict[str | None, object] = {}
    for key in uses:
        found = kept.use(key)
        if key in order:
            assert found is held[key]
            order.remove(key)
        else:
            assert all(found is not other for other in held.values())
            held[key] = found
        order.append(key)
        del order[:-bound]
        assert list(kept) == order


# -- one aligner --------------------------------------------------------------------------------


@given(
    st.lists(st.integers(0, 3), max_size=12),
    st.lists(st.integers(0, 3), max_size=12),
    st.booleans(),
)
def test_leading_counts_the_items_both_lists_open_with(
    known: list[int], given_items: list[int], as_tuple: bool
) -> None:
    before = list(known)
    found = leading(known, tuple(given_items) if as_tuple else given_items)
    common = 0
    while common < min(len(known), len(given_items)) and known[common] == given_items[common]:
        common += 1
    assert found == common
    assert known == before  # read, not changed


def test_leading_takes_the_same_objects_without_asking_them() -> None:
    class Unequal:
        def __eq__(self, other: object) -> bool:
            raise AssertionError("compared by value")

        __hash__ = object.__hash__

    items = [Unequal() for _ in range(3)]
    assert leading(items[:2], items) == 2
    assert leading([], items) == 0


def test_compactor_from_builds_over_the_adapters_defaults() -> None:
    built = compactor_from(None, {"model": "gpt-4o"}, defaults={"provider": "anthropic"})
    assert (built.settings.model, built.settings.provider) == ("gpt-4o", "anthropic")
    assert built.remembered_sessions == Compactor.remembered_sessions
    chosen = compactor_from(None, {"provider": "openai"}, defaults={"provider": "anthropic"})
    assert chosen.settings.provider == "openai"  # the caller's option over the default
