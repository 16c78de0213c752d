from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st
from pydantic import ValidationError

from synopsis.config import Settings
from synopsis.config.text import (
    explain,
    normalize_keep,
    normalize_trigger,
    parse_keep,
    parse_trigger,
    toml_value,
    trigger_fraction,
)
from synopsis.errors import ConfigurationError
from synopsis.formats import FORMATS
from synopsis.planning import (
    GovernorConfig,
    Keep,
    Protect,
    Reductions,
    Trigger,
    TruncateArgs,
)
from synopsis.validation.profiles import PROFILES

if TYPE_CHECKING:
    from pathlib import Path

# One valid, non-default value per option: (Python value, the same as environment text).
SAMPLES: dict[str, tuple[Any, str]] = {
    "model": ("gpt-4o", "gpt-4o"),
    "context_window": (128_000, "128000"),
    "reserve_output_tokens": (4_000, "4000"),
    "trigger": ("tokens:150000|messages:300", "tokens:150000|messages:300"),
    "enabled": (False, "false"),
    "reset_ratio": (0.6, "0.6"),
    "target_ratio": (0.4, "0.4"),
    "min_messages": (20, "20"),
    "cooldown_messages": (8, "8"),
    "emergency_ratio": (0.95, "0.95"),
    "max_passes": (2, "2"),
    "min_tail_messages": (4, "4"),
    "max_per_turn": (2, "2"),
    "breaker_failures": (5, "5"),
    "refill_compactions": (4, "4"),
    "refill_requests": (2, "2"),
    "on_unreachable": ("return", "return"),
    "min_savings": (0.2, "0.2"),
    "refresh_after_messages": (50, "50"),
    "keep": ("tokens:8000", "tokens:8000"),
    "protect_system": (False, "no"),
    "protect_first_user": (False, "0"),
    "pinned": (("a", "b"), "a,b"),
    "user_turns_tokens": (1_000, "1000"),
    "truncate_args": (False, "off"),
    "truncate_tools": (("write",), "write"),
    "truncate_trigger": (0.5, "0.5"),
    "truncate_keep_messages": (10, "10"),
    "truncate_max_length": (500, "500"),
    "truncate_prefix": (10, "10"),
    "strategy": (("clear", "summarize"), "clear, summarize"),
    "clear_keep_uses": (5, "5"),
    "clear_keep_tokens": (50_000, "50000"),
    "clear_at_least": (30_000, "30000"),
    "clear_exclude_tools": (("recall_history",), "recall_history"),
    "clear_tool_inputs": (True, "true"),
    "dedupe_results": (False, "false"),
    "dedupe_min_chars": (100, "100"),
    "dedupe_keep_messages": (5, "5"),
    "message_threshold": (0.25, "0.25"),
    "summarizer": ("anthropic", "anthropic"),
    "summarizer_models": (("m1", "m2"), "m1, m2"),
    "base_url": ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    "api_key_env": ("MY_KEY", "MY_KEY"),
    "summary_ratio": (0.5, "0.5"),
    "min_summary_tokens": (512, "512"),
    "max_summary_tokens": (1_000, "1000"),
    "rules_max_summary_tokens": (300, "300"),
    "max_input_tokens": (8_000, "8000"),
    "oversize": ("trim", "trim"),
    "cache_aligned": (True, "true"),
    "strict_messages": (True, "1"),
    "preserved_thinking": (True, "true"),
    "abort_on_failure": (True, "yes"),
    "max_retries": (0, "0"),
    "timeout": (12.5, "12.5"),
    "summarizer_timeout": (30.0, "30"),
    "summary_role": ("system", "system"),
    "summary_style": ("snapshot", "snapshot"),
    "store": ("memory", "memory"),
    "session_id": ("sess-1", "sess-1"),
    "format": ("anthropic", "anthropic"),
    "provider": ("openai-strict", "openai-strict"),
}

# One bad value per option: (keyword/TOML value, environment text or None when any text is
# accepted, a fragment of the sentence).
BAD: dict[str, tuple[Any, str | None, str]] = {
    "model": (5, None, "model must be text"),
    "context_window": (0, "0", "context_window must be above 0"),
    "reserve_output_tokens": (-1, "-1", "reserve_output_tokens must be at least 0"),
    "trigger": (1.5, "1.5", "trigger must be a fraction in (0, 1], got 1.5"),
    "enabled": ("maybe", "maybe", "enabled must be true or false"),
    "reset_ratio": (1.0, "1", "reset_ratio must be below 1"),
    "target_ratio": (1.0, "1", "target_ratio must be below 1"),
    "min_messages": (-1, "twelve", "min_messages must be"),
    "cooldown_messages": (-1, "-1", "cooldown_messages must be at least 0"),
    "emergency_ratio": (11, "0", "emergency_ratio must be"),
    "max_passes": (0, "0", "max_passes must be at least 1"),
    "min_tail_messages": (-2, "-2", "min_tail_messages must be at least 0"),
    "max_per_turn": (0, "0", "max_per_turn must be at least 1"),
    "breaker_failures": (0, "0", "breaker_failures must be at least 1"),
    "refill_compactions": (0, "0", "refill_compactions must be at least 1"),
    "refill_requests": (0, "0", "refill_requests must be at least 1"),
    "on_unreachable": ("warn", "warn", "on_unreachable must be 'raise' or 'return'"),
    "min_savings": (1.5, "1.5", "min_savings must be at most 1"),
    "refresh_after_messages": (0, "0", "refresh_after_messages must be at least 1"),
    "keep": (-3, "-3", "keep must be 'auto', a whole number of messages >= 0"),
    "protect_system": ("sometimes", "sometimes", "protect_system must be true or false"),
    "protect_first_user": (3, "3", "protect_first_user must be true or false"),
    "pinned": (["a", 3], None, "pinned[1] must be text, got 3"),
    "user_turns_tokens": (-5, "-5", "user_turns_tokens must be at least 0"),
    "truncate_args": ("x", "x", "truncate_args must be true or false"),
    "strategy": (["clear", "clear"], "summarize,forget", "strategy must be 'clear', 'summarize'"),
    "clear_keep_uses": (-1, "-1", "clear_keep_uses must be at least 0"),
    "clear_keep_tokens": (-1, "-1", "clear_keep_tokens must be at least 0"),
    "clear_at_least": (-1, "-1", "clear_at_least must be at least 0"),
    "clear_exclude_tools": ([""], None, "clear_exclude_tools must not hold an empty name"),
    "clear_tool_inputs": ("x", "x", "clear_tool_inputs must be true or false"),
    "truncate_tools": ([1], None, "truncate_tools[0] must be text"),
    "truncate_trigger": (0, "0", "truncate_trigger must be above 0"),
    "truncate_keep_messages": (-1, "-1", "truncate_keep_messages must be at least 0"),
    "truncate_max_length": (-1, "-1", "truncate_max_length must be at least 0"),
    "truncate_prefix": (-1, "-1", "truncate_prefix must be at least 0"),
    "dedupe_results": ("x", "x", "dedupe_results must be true or false"),
    "dedupe_min_chars": (-1, "-1", "dedupe_min_chars must be at least 0"),
    "dedupe_keep_messages": (-1, "-1", "dedupe_keep_messages must be at least 0"),
    "message_threshold": (2, "2", "message_threshold must be at most 1"),
    "summarizer": ("gpt", "gpt", "summarizer must be 'rules', 'openai'"),
    "summarizer_models": ([" "], None, "summarizer_models must not hold an empty name"),
    "base_url": ("ftp://x", "ftp://x", "base_url must start with http:// or https://"),
    "api_key_env": ("sk-abc123", "sk-abc123", "api_key_env must be the name of"),
    "summary_ratio": (0, "0", "summary_ratio must be above 0"),
    "min_summary_tokens": (10, "10", "min_summary_tokens must be at least 64"),
    "max_summary_tokens": (0, "0", "max_summary_tokens must be at least 1"),
    "rules_max_summary_tokens": (0, "0", "rules_max_summary_tokens must be at least 1"),
    "max_input_tokens": (0, "0", "max_input_tokens must be at least 1"),
    "oversize": ("cut", "cut", "oversize must be 'chunk' or 'trim', got 'cut'"),
    "cache_aligned": ("x", "x", "cache_aligned must be true or false"),
    "strict_messages": ("x", "x", "strict_messages must be true or false"),
    "preserved_thinking": ("x", "x", "preserved_thinking must be true or false"),
    "abort_on_failure": ("x", "x", "abort_on_failure must be true or false"),
    "max_retries": (-1, "-1", "max_retries must be at least 0"),
    "timeout": (0, "0", "timeout must be above 0"),
    "summarizer_timeout": (-1, "-1", "summarizer_timeout must be above 0"),
    "summary_role": ("assistant", "assistant", "summary_role must be 'auto'"),
    "summary_style": ("prose", "prose", "summary_style must be 'sections' or 'snapshot'"),
    "store": (5, None, "store must be text"),
    "session_id": (5, None, "session_id must be text"),
    "format": ("xml", "xml", "format must be 'openai'"),
    "provider": ("cohere", "cohere", "provider must be one of 'openai'"),
}


def literal(value: object) -> str:
    """A TOML value written by hand (JSON and TOML agree on these)."""
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def expected(name: str) -> Any:
    return SAMPLES[name][0]


def assert_clean(message: str) -> None:
    lowered = message.lower()
    assert "pydantic" not in lowered
    assert "validation error" not in lowered
    assert "input should" not in lowered
    assert "errors.pydantic.dev" not in lowered


def error_of(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConfigurationError) as caught:
        Settings.load(*args, **kwargs)
    # No pydantic traceback chained on: raised afresh, or "from None".
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None or caught.value.__suppress_context__
    message = str(caught.value)
    assert_clean(message)
    return message


# -- defaults and builders -------------------------------------------------------------------


def test_the_tables_cover_every_option() -> None:
    assert set(SAMPLES) == set(Settings.model_fields)
    assert set(BAD) == set(Settings.model_fields)


def test_defaults_are_the_planning_cores_own() -> None:
    s = Settings()
    assert s.governor() == GovernorConfig()
    assert s.trigger_policy() == GovernorConfig().default_trigger()
    assert s.keep_policy() == Keep.auto()
    # A compaction lands at half the window; the summary takes 30% of the room, from 256
    # tokens up to the summarizer's ceiling (no longer a fixed 500 or 2,000 for any window).
    assert (s.target_ratio, s.summary_ratio, s.min_summary_tokens) == (0.5, 0.5, 256)
    assert (s.rules_max_summary_tokens, s.max_summary_tokens) == (8000, 4000)
    assert s.target_ratio < s.reset_ratio
    assert s.protect() == Protect()
    assert s.reductions() == Reductions()
    for f in dataclasses.fields(GovernorConfig):
        if f.name != "trigger_ratio":
            assert Settings.model_fields[f.name].default == f.default, f.name


def test_every_option_set_by_keyword_reaches_the_settings() -> None:
    for name, (value, _) in SAMPLES.items():
        assert getattr(Settings(**{name: value}), name) == value, name


def test_the_builders_carry_every_option() -> None:
    s = Settings(**{name: value for name, (value, _) in SAMPLES.items()})
    assert s.governor() == GovernorConfig(
        enabled=False,
        trigger_ratio=1.0,
        reset_ratio=0.6,
        min_messages=20,
        cooldown_messages=8,
        emergency_ratio=0.95,
        max_passes=2,
        min_tail_messages=4,
        max_per_turn=2,
        breaker_failures=5,
        min_savings=0.2,
        refresh_after_messages=50,
        refill_compactions=4,
        refill_requests=2,
    )
    assert s.trigger_policy() == Trigger.tokens(150_000) | Trigger.messages(300)
    assert s.keep_policy() == Keep.tokens(8_000)
    assert s.protect() == Protect(
        system=False, first_user=False, pinned=("a", "b"), user_turns_tokens=1_000
    )
    assert s.reductions() == Reductions(
        truncate_args=None,
        dedupe_results=False,
        dedupe_min_chars=100,
        dedupe_keep_messages=5,
        message_threshold=0.25,
    )
    on = Settings(
        truncate_tools="write, patch",
        truncate_trigger=0.5,
        truncate_keep_messages=10,
        truncate_max_length=500,
        truncate_prefix=10,
    )
    assert on.reductions().truncate_args == TruncateArgs(
        tools=frozenset({"write", "patch"}),
        trigger=Trigger.fraction(0.5),
        keep_messages=10,
        max_length=500,
        prefix=10,
    )


@pytest.mark.parametrize(
    ("trigger", "ratio"),
    [
        (0.85, 0.85),
        ("fraction:0.9|messages:200", 0.9),
        ("fraction:0.9|fraction:0.75", 0.75),
        ("fraction:0.9&fraction:0.75", 0.9),
        ("tokens:200000", 1.0),
        ("tokens:5&messages:9", 1.0),
    ],
)
def test_the_governors_ratio_is_the_triggers_fraction(trigger: Any, ratio: float) -> None:
    assert Settings(trigger=trigger, reset_ratio=0.5).governor().trigger_ratio == ratio


# -- sources and precedence ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_option_set_from_a_file_and_from_the_environment(tmp_path: Path, name: str) -> None:
    value, text = SAMPLES[name]
    path = write(tmp_path / "synopsis.toml", f"[synopsis]\n{name} = {literal(value)}\n")
    assert getattr(Settings.load(path, environ={}), name) == value
    env = {f"SYNOPSIS_{name.upper()}": text}
    assert getattr(Settings.load(environ=env), name) == value


def test_the_file_may_hold_options_at_its_top_level_or_in_pyproject(tmp_path: Path) -> None:
    top = write(tmp_path / "top.toml", 'keep = 4\ntrigger = "messages:90"\n')
    assert Settings.load(top, environ={}).keep == 4
    project = write(
        tmp_path / "pyproject.toml", '[project]\nname = "x"\n[tool.synopsis]\nkeep = 5\n'
    )
    assert Settings.load(project, environ={}).keep == 5
    bare_project = write(tmp_path / "sub.toml", "[tool.other]\nx = 1\n[synopsis]\nkeep = 7\n")
    assert Settings.load(bare_project, environ={}).keep == 7


def test_a_pyproject_without_a_synopsis_table_gives_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    path = write(tmp_path / "p" / "pyproject.toml", '[project]\nname = "x"\n')
    assert Settings.load(path, environ={}) == Settings()


def test_keywords_beat_the_environment_which_beats_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "synopsis.toml",
        '[synopsis]\ntrigger = 0.75\nkeep = "messages:3"\npinned = ["f"]\nmodel = "file"\n',
    )
    env = {"SYNOPSIS_TRIGGER": "0.85", "SYNOPSIS_KEEP": "tokens:9", "SYNOPSIS_CONFIG": "x"}
    s = Settings.load(path, environ=env, trigger=0.9)
    assert (s.trigger, s.keep, s.pinned, s.model) == (0.9, "tokens:9", ("f",), "file")
    assert Settings.load(path, environ={}).trigger == 0.75
    assert Settings.load(environ={}).trigger == 0.8
    # None given as a keyword unsets, over any source.
    assert Settings.load(path, environ={}, model=None).model is None


def test_the_file_named_by_synopsis_config_is_read_when_no_path_is_given(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "conf.toml", "[synopsis]\nmin_messages = 30\n")
    env = {"SYNOPSIS_CONFIG": str(path), "SYNOPSIS_DATA_DIR": str(tmp_path)}
    assert Settings.load(environ=env).min_messages == 30


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import os  # noqa: PLC0415

    for key in list(os.environ):
        if key.startswith("SYNOPSIS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SYNOPSIS_KEEP", "fraction:0.3")
    monkeypatch.setenv("UNRELATED", "1")
    assert Settings.load().keep_policy() == Keep.fraction(0.3)


def test_environment_text_forms() -> None:
    s = Settings.load(
        environ={
            "SYNOPSIS_PINNED": " a, b,,c ",
            "SYNOPSIS_MESSAGE_THRESHOLD": "none",
            "SYNOPSIS_MODEL": "",
            "SYNOPSIS_USER_TURNS_TOKENS": "NULL",
            "SYNOPSIS_TRIGGER": " 0.75 ",
            "SYNOPSIS_KEEP": "6",
            "synopsis_keep": "ignored: not ours",
        }
    )
    assert s.pinned == ("a", "b", "c")
    assert s.message_threshold is None
    assert s.model is None
    assert s.user_turns_tokens is None
    assert s.trigger == 0.75
    assert s.keep == 6


def test_unknown_environment_variables_are_named() -> None:
    message = error_of(environ={"SYNOPSIS_TRIGER": "0.8", "SYNOPSIS_ZZZZZ": "1"})
    assert "SYNOPSIS_TRIGER (did you mean SYNOPSIS_TRIGGER?)" in message
    assert "SYNOPSIS_ZZZZZ" in message
    assert message.startswith("unknown environment variables ")
    single = error_of(environ={"SYNOPSIS_QQ": "1"})
    assert single.startswith("unknown environment variable SYNOPSIS_QQ;")


# -- bad values ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_keyword_names_the_option(name: str) -> None:
    value, _, fragment = BAD[name]
    with pytest.raises(ConfigurationError) as caught:
        Settings(**{name: value})
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message
    assert_clean(message)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_file_value_names_the_file_and_the_option(tmp_path: Path, name: str) -> None:
    value, _, fragment = BAD[name]
    path = write(tmp_path / "synopsis.toml", f"[synopsis]\n{name} = {literal(value)}\n")
    message = error_of(path, environ={})
    assert message.startswith(f"{path}: [synopsis] {name}: ")
    assert fragment in message


@pytest.mark.parametrize("name", sorted(n for n, bad in BAD.items() if bad[1] is not None))
def test_a_bad_environment_value_names_the_variable(name: str) -> None:
    _, text, fragment = BAD[name]
    assert text is not None
    key = f"SYNOPSIS_{name.upper()}"
    message = error_of(environ={key: text})
    shown = key if name == "api_key_env" else f"{key}={text}"
    assert message.startswith(f"{shown}: ")
    assert fragment in message


def test_the_interfaces_own_examples() -> None:
    assert error_of(environ={"SYNOPSIS_TRIGGER": "1.5"}) == (
        "SYNOPSIS_TRIGGER=1.5: trigger must be a fraction in (0, 1], got 1.5"
    )
    assert "keep must be" in error_of(keep=-3)
    assert error_of(keep=-3).endswith("got -3")


def test_an_api_key_put_in_place_of_its_name_is_never_echoed(tmp_path: Path) -> None:
    secret = "sk-proj-abc123"
    assert secret not in error_of(environ={"SYNOPSIS_API_KEY_ENV": secret})
    path = write(tmp_path / "s.toml", f'api_key_env = "{secret}"\n')
    assert secret not in error_of(path, environ={})
    assert Settings(api_key_env="_OK_2").api_key_env == "_OK_2"
    for name in ("2KEY", "MY-KEY", "KÉY"):
        with pytest.raises(ConfigurationError):
            Settings(api_key_env=name)


def test_every_problem_gets_its_own_sentence() -> None:
    message = error_of(min_messages=-1, keep=-3, summary_style="x")
    assert len(message.splitlines()) == 3


def test_unknown_options_are_named_with_a_suggestion(tmp_path: Path) -> None:
    assert error_of(trigerr=0.8) == "unknown option 'trigerr' (did you mean 'trigger'?)"
    assert error_of(zzzz=1) == "unknown option 'zzzz'"
    path = write(tmp_path / "synopsis.toml", "[synopsis]\nkep = 3\n")
    assert error_of(path, environ={}) == (
        f"{path}: [synopsis] kep: unknown option 'kep' (did you mean 'keep'?)"
    )
    top = write(tmp_path / "top.toml", "kep = 3\n")
    assert error_of(top, environ={}).startswith(f"{top}: kep: unknown option")


def test_reset_must_be_below_the_trigger_and_both_sources_are_named(tmp_path: Path) -> None:
    path = write(tmp_path / "synopsis.toml", "[synopsis]\ntrigger = 0.9\n")
    message = error_of(path, environ={"SYNOPSIS_RESET_RATIO": "0.95"})
    assert message == (
        f"SYNOPSIS_RESET_RATIO=0.95, {path}: [synopsis] trigger: reset_ratio (0.95) must be "
        "below the trigger's fraction (0.9): it is the level a compaction aims for (leave it "
        "unset and it follows the trigger)"
    )
    given = error_of(trigger="fraction:0.6|tokens:5", reset_ratio=0.7)
    assert given.startswith("reset_ratio (0.7) must be")
    # A trigger on tokens alone leaves the reset ratio free.
    assert Settings(trigger="tokens:100000", reset_ratio=0.95).reset_ratio == 0.95


@pytest.mark.parametrize("trigger", [0.7, 0.6, "0.5", "fraction:0.3|tokens:5000", "0.2&messages:4"])
def test_a_lower_trigger_takes_the_aim_and_the_landing_down_with_it(trigger: object) -> None:
    default = Settings()
    fraction = trigger_fraction(parse_trigger(trigger))
    assert fraction is not None
    s = Settings(trigger=trigger)
    follows = fraction / float(default.trigger)
    assert s.reset_ratio == pytest.approx(default.reset_ratio * follows)
    assert s.target_ratio == pytest.approx(default.target_ratio * follows)
    assert s.target_ratio < s.reset_ratio < fraction
    assert s.governor().reset_ratio == s.reset_ratio
    # One set by hand stays; the landing keeps its default then, and follows otherwise.
    assert Settings(trigger=trigger, reset_ratio=fraction / 2).target_ratio == default.target_ratio
    held = Settings(trigger=trigger, target_ratio=0.1)
    assert (held.reset_ratio, held.target_ratio) == (s.reset_ratio, 0.1)


@pytest.mark.parametrize("trigger", [0.8, 0.95, "tokens:100000", "messages:40"])
def test_a_trigger_at_or_above_the_default_leaves_them_be(trigger: object) -> None:
    s, default = Settings(trigger=trigger), Settings()
    assert (s.reset_ratio, s.target_ratio) == (default.reset_ratio, default.target_ratio)


def test_a_trigger_that_does_not_parse_is_said_as_the_triggers_problem() -> None:
    assert error_of(trigger="fraction:lots").startswith("trigger must be")


def test_the_reserve_must_leave_room_in_the_window() -> None:
    assert error_of(context_window=1000, reserve_output_tokens=1000) == (
        "reserve_output_tokens (1000) must be below context_window (1000)"
    )
    assert Settings(reserve_output_tokens=10**9).reserve_output_tokens == 10**9


def test_truncation_must_shorten_but_only_when_it_is_on() -> None:
    message = error_of(truncate_max_length=43)
    assert message.startswith("truncate_prefix (20) plus the 23-character marker")
    assert Settings(truncate_max_length=44).reductions().truncate_args is not None
    assert Settings(truncate_args=False, truncate_max_length=0).reductions().truncate_args is None


def test_switches_and_numbers_are_not_confused() -> None:
    assert error_of(min_messages=True) == "min_messages must be a number, got True"
    assert error_of(context_window=False) == "context_window must be a number, got False"
    assert error_of(timeout=float("nan")) == "timeout must be a finite number, got nan"
    assert error_of(min_messages=2.5).startswith("min_messages must be a whole number")
    assert error_of(pinned=5) == (
        "pinned must be a list of names (or one comma-separated text), got 5"
    )


def test_file_problems(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    assert error_of(missing, environ={}) == f"{missing}: no such file"
    assert error_of(environ={"SYNOPSIS_CONFIG": str(missing)}) == (
        f"SYNOPSIS_CONFIG={missing}: no such file"
    )
    broken = write(tmp_path / "broken.toml", "keep = = 3\n")
    assert error_of(broken, environ={}).startswith(f"{broken}: not valid TOML (")
    assert error_of(tmp_path, environ={}).startswith(f"{tmp_path}: cannot be read (")
    scalar = write(tmp_path / "scalar.toml", "synopsis = 3\n")
    assert error_of(scalar, environ={}) == f"{scalar}: [synopsis] must be a table of options"
    tool = write(tmp_path / "pyproject.toml", "[tool]\nsynopsis = [1]\n")
    assert error_of(tool, environ={}) == (f"{tool}: [tool.synopsis] must be a table of options")


# -- text forms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "trigger"),
    [
        ("0.8", Trigger.fraction(0.8)),
        (" Fraction : 0.5 ", Trigger.fraction(0.5)),
        ("tokens:200_000", Trigger.tokens(200_000)),
        ("MESSAGES:200", Trigger.messages(200)),
        ("fraction:0.8|messages:200", Trigger.fraction(0.8) | Trigger.messages(200)),
        ("tokens:9&messages:3", Trigger.tokens(9) & Trigger.messages(3)),
        (
            "tokens:9 & messages:3 | 0.9",
            (Trigger.tokens(9) & Trigger.messages(3)) | Trigger.fraction(0.9),
        ),
        (
            "0.9|tokens:9&messages:3",
            Trigger.fraction(0.9) | (Trigger.tokens(9) & Trigger.messages(3)),
        ),
    ],
)
def test_trigger_texts(text: str, trigger: Trigger) -> None:
    assert parse_trigger(text) == trigger
    assert Settings(trigger=text, reset_ratio=0.1).trigger_policy() == trigger


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "trigger has an empty part in ''"),
        ("0.5|", "trigger has an empty part in '0.5|'"),
        ("tokens:0", "trigger tokens must be a whole number above 0, got 'tokens:0'"),
        ("messages:1.5", "trigger messages must be a whole number above 0"),
        ("fraction:0", "trigger must be a fraction in (0, 1], got 'fraction:0'"),
        ("fraction:x", "trigger must be a fraction in (0, 1], got 'fraction:x'"),
        ("weeks:3", "trigger must be a fraction in (0, 1], 'fraction:F'"),
        ("soon", "got 'soon'"),
        ("nan", "got nan"),
        ("inf", "got inf"),
        (0, "got 0"),
        (2, "got 2"),
        (True, "got True"),
        ([0.5], "got [0.5]"),
    ],
)
def test_bad_triggers(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=r"^trigger") as caught:
        normalize_trigger(value)
    assert fragment in str(caught.value)
    assert fragment in error_of(trigger=value)


def test_triggers_are_stored_in_one_form() -> None:
    assert Settings(trigger="0.75").trigger == 0.75
    assert Settings(trigger=1).trigger == 1.0
    assert isinstance(Settings(trigger=1).trigger, float)
    assert Settings(trigger=" fraction:0.8 ").trigger == "fraction:0.8"


@pytest.mark.parametrize(
    ("value", "keep"),
    [
        (0, Keep.messages(0)),
        (6, Keep.messages(6)),
        ("6", Keep.messages(6)),
        ("messages:4", Keep.messages(4)),
        (" Tokens : 8_000 ", Keep.tokens(8_000)),
        ("fraction:0.3", Keep.fraction(0.3)),
        ("fraction:0", Keep.fraction(0.0)),
        ("auto", Keep.auto()),
        (" AUTO ", Keep.auto()),
    ],
)
def test_keep_texts(value: object, keep: Keep) -> None:
    assert parse_keep(value) == keep
    assert Settings(keep=value).keep_policy() == keep


@pytest.mark.parametrize(
    "value",
    [
        -3,
        "-3",
        "fraction:1",
        "fraction:x",
        "tokens:-1",
        "6.5",
        6.5,
        True,
        "hours:3",
        None,
        "auto:3",
    ],
)
def test_bad_keeps(value: object) -> None:
    with pytest.raises(ValueError, match=r"^keep must be "):
        normalize_keep(value)
    assert error_of(keep=value).startswith("keep must be ")


def test_keeps_are_stored_in_one_form() -> None:
    assert Settings(keep="12").keep == 12
    assert Settings(keep=" tokens:5 ").keep == "tokens:5"


def test_the_fraction_a_trigger_fires_at() -> None:
    assert trigger_fraction(Trigger.fraction(0.8)) == 0.8
    assert trigger_fraction(Trigger.tokens(5)) is None
    assert trigger_fraction(Trigger.messages(5) | Trigger.tokens(5)) is None
    assert trigger_fraction(Trigger.fraction(0.9) | Trigger.fraction(0.7)) == 0.7
    assert trigger_fraction(Trigger.fraction(0.9) & Trigger.fraction(0.7)) == 0.9
    nested = (Trigger.fraction(0.9) & Trigger.messages(4)) | Trigger.tokens(3)
    assert trigger_fraction(nested) == 0.9


def test_toml_values() -> None:
    assert toml_value(True) == "true"
    assert toml_value(3) == "3"
    assert toml_value(0.1) == "0.1"
    assert toml_value(("a", 'q"\\\t\n\x7f\x00é')) == '["a", "q\\"\\\\\t\\u000A\\u007F\\u0000é"]'
    with pytest.raises(ValueError, match="no place"):
        toml_value(float("inf"))
    with pytest.raises(ValueError, match="cannot be written"):
        toml_value({"a": 1})


def test_explain_rewords_what_it_does_not_know() -> None:
    error = ValidationError.from_exception_data(
        "Settings",
        [
            {"type": "missing", "loc": ("model",), "input": {}},
            {"type": "date_type", "loc": ("store",), "input": 3},
        ],
    )
    assert explain(error, {"store": "here"}, ["model", "store"]).splitlines() == [
        "model field required, got {}",
        "here: store must be a valid date, got 3",
    ]


# -- dump, reference -------------------------------------------------------------------------


def test_to_toml_writes_every_set_option_and_unsets_what_it_must(tmp_path: Path) -> None:
    s = Settings(message_threshold=None, model="m")
    text = s.to_toml()
    data = tomllib.loads(text)["synopsis"]
    assert data["message_threshold"] == "none"
    assert data["model"] == "m"
    assert "store" not in data
    assert set(data) == {n for n in Settings.model_fields if getattr(s, n) is not None} | {
        "message_threshold"
    }
    path = write(tmp_path / "pyproject.toml", s.to_toml("tool.synopsis"))
    assert Settings.load(path, environ={}) == s


# Every description ends by naming, in brackets, where the option was taken from: one of the
# systems of docs/lineage.md, or synopsis itself.
SOURCE = re.compile(
    r"\((?:the )?(?:synopsis|zrb|chat-app plan|mcpagent|coding-agent plan|adk-deepagents)\b"
    r"[^()]*\)\.$"
)


def test_reference_lists_every_option_with_its_source() -> None:
    rows = {name: (kind, default, text) for name, kind, default, text in Settings.reference()}
    assert list(rows) == list(Settings.model_fields)
    assert rows["trigger"][:2] == ("float | str", "0.8")
    assert rows["keep"][:2] == ("int | str", '"auto"')
    assert rows["target_ratio"][:2] == ("float", "0.5")
    assert rows["summary_ratio"][:2] == ("float", "0.5")
    assert rows["min_summary_tokens"][:2] == ("int", "256")
    assert rows["pinned"][:2] == ("list[str]", "[]")
    assert rows["model"][:2] == ("str | None", "unset")
    assert rows["enabled"][:2] == ("bool", "true")
    assert rows["oversize"][0] == "'chunk' | 'trim'"
    assert rows["format"][0] == " | ".join([*(repr(f) for f in FORMATS), "None"])
    for name, (_, _, text) in rows.items():
        assert SOURCE.search(text), name


# -- properties ------------------------------------------------------------------------------

names = st.lists(
    st.text(min_size=1).filter(lambda t: t.strip() != "" and "," not in t), max_size=3
).map(tuple)
optional_text = st.none() | st.text(min_size=1)
whole = st.integers(min_value=0, max_value=10**7)
share = st.floats(min_value=0.01, max_value=1.0)
trigger_term = st.one_of(
    share.map(lambda f: f"fraction:{f!r}"),
    st.integers(1, 10**6).map(lambda n: f"tokens:{n}"),
    st.integers(1, 10**4).map(lambda n: f"messages:{n}"),
)
trigger_text = st.lists(st.lists(trigger_term, min_size=1, max_size=3), min_size=1, max_size=3)

FIELDS = {
    "model": optional_text,
    "context_window": st.none() | st.integers(1, 10**7),
    "reserve_output_tokens": st.none() | whole,
    "trigger": share | trigger_text.map(lambda t: "|".join("&".join(a) for a in t)),
    "enabled": st.booleans(),
    "reset_ratio": st.floats(0.01, 0.99),
    "target_ratio": st.floats(0.01, 0.99),
    "min_messages": whole,
    "cooldown_messages": whole,
    "emergency_ratio": st.floats(0.01, 10.0),
    "max_passes": st.integers(1, 10),
    "min_tail_messages": whole,
    "max_per_turn": st.integers(1, 10),
    "breaker_failures": st.integers(1, 10),
    "refill_compactions": st.integers(1, 10),
    "refill_requests": st.integers(1, 10),
    "on_unreachable": st.sampled_from(["raise", "return"]),
    "min_savings": share,
    "refresh_after_messages": st.none() | st.integers(1, 1000),
    "keep": whole
    | st.sampled_from(["auto", "messages:3", "tokens:4000"])
    | st.floats(0.0, 0.99).map(lambda f: f"fraction:{f!r}"),
    "protect_system": st.booleans(),
    "protect_first_user": st.booleans(),
    "pinned": names,
    "user_turns_tokens": st.none() | whole,
    "truncate_args": st.booleans(),
    "strategy": st.sampled_from([("clear",), ("summarize",), ("clear", "summarize")]),
    "clear_keep_uses": whole,
    "clear_keep_tokens": whole,
    "clear_at_least": st.none() | whole,
    "clear_exclude_tools": names,
    "clear_tool_inputs": st.booleans(),
    "truncate_tools": names,
    "truncate_trigger": share,
    "truncate_keep_messages": whole,
    "truncate_max_length": st.integers(50, 10**5),
    "truncate_prefix": st.integers(0, 20),
    "dedupe_results": st.booleans(),
    "dedupe_min_chars": whole,
    "dedupe_keep_messages": whole,
    "message_threshold": st.none() | share,
    "summarizer": st.sampled_from(["rules", "openai", "openai-responses", "anthropic"]),
    "summarizer_models": names,
    "base_url": st.none() | st.sampled_from(["http://localhost:1/v1", "https://x.example"]),
    "api_key_env": st.none() | st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True),
    "summary_ratio": st.floats(0.01, 1.0),
    "min_summary_tokens": st.integers(64, 10**5),
    "max_summary_tokens": st.integers(1, 10**5),
    "rules_max_summary_tokens": st.integers(1, 10**5),
    "max_input_tokens": st.none() | st.integers(1, 10**6),
    "oversize": st.sampled_from(["chunk", "trim"]),
    "cache_aligned": st.booleans(),
    "strict_messages": st.booleans(),
    "preserved_thinking": st.booleans(),
    "abort_on_failure": st.booleans(),
    "max_retries": st.integers(0, 10),
    "timeout": st.floats(0.01, 1e4),
    "summarizer_timeout": st.none() | st.floats(0.01, 1e4),
    "summary_role": st.sampled_from(["auto", "user", "system", "merge"]),
    "summary_style": st.sampled_from(["sections", "snapshot"]),
    "store": optional_text,
    "session_id": optional_text,
    "format": st.none() | st.sampled_from(FORMATS),
    "provider": st.none() | st.sampled_from(sorted(PROFILES)),
}


def test_the_strategies_cover_every_option() -> None:
    assert set(FIELDS) == set(Settings.model_fields)


@st.composite
def valid_settings(draw: st.DrawFn) -> Settings:
    chosen = draw(st.fixed_dictionaries({}, optional=FIELDS))
    try:
        return Settings(**chosen)
    except ConfigurationError:
        reject()


@given(valid_settings())
def test_any_valid_settings_survive_a_toml_round_trip_and_build(
    tmp_path_factory: pytest.TempPathFactory, settings: Settings
) -> None:
    path = tmp_path_factory.getbasetemp() / "round-trip.toml"
    path.write_text(settings.to_toml(), encoding="utf-8")
    assert Settings.load(path, environ={}) == settings
    settings.governor()
    settings.reductions()
    settings.protect()
    settings.keep_policy()
    assert settings.trigger_policy().fires is not None


@given(trigger_text, st.sampled_from(["", " "]))
def test_trigger_text_reads_as_the_same_operators_in_python(
    alternatives: list[list[str]], pad: str
) -> None:
    text = "|".join("&".join(pad + term + pad for term in group) for group in alternatives)
    either = None
    for group in alternatives:
        both = None
        for term in group:
            leaf = parse_trigger(term)
            both = leaf if both is None else both & leaf
        assert both is not None
        either = both if either is None else either | both
    assert parse_trigger(text) == either


def test_the_configuration_page_is_up_to_date() -> None:
    """docs/configuration.md is what scripts/gen_config_doc.py writes from Settings."""
    import importlib.util  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "gen_config_doc", root / "scripts" / "gen_config_doc.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (root / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == module.render(), "run: python scripts/gen_config_doc.py"
    for name in Settings.model_fields:
        assert f"| `{name}` |" in page
