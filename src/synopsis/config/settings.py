"""Every option of the compaction pipeline in one validated, frozen model: :class:`Settings`.

Options come from keywords, ``SYNOPSIS_<OPTION>`` environment variables and a TOML file, in that
order of precedence, over the defaults listed in docs/configuration.md (:meth:`Settings.load`). A
bad value, from anywhere, is a :class:`~synopsis.errors.ConfigurationError` whose sentence names
the option and where it came from. The builders turn the settings into the planning core's values.
"""

from __future__ import annotations

import difflib
import os
import tomllib
import types
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, cast, get_args, get_origin

from pydantic import ValidationError, model_validator

from synopsis.config.fields import SettingsFields
from synopsis.config.text import (
    Problems,
    explain,
    parse_keep,
    parse_trigger,
    toml_table,
    toml_value,
    trigger_fraction,
)
from synopsis.errors import ConfigurationError
from synopsis.planning import (
    Clearing,
    GovernorConfig,
    Keep,
    Protect,
    Reductions,
    Trigger,
    TruncateArgs,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ENV_PREFIX", "Settings"]

ENV_PREFIX = "SYNOPSIS_"
_ENV_NOT_OPTIONS = frozenset({"SYNOPSIS_CONFIG", "SYNOPSIS_DATA_DIR"})
"""Read elsewhere: the TOML file to load, and the stores' data directory."""
_MARKER = TruncateArgs().marker

# Where the values being validated came from (option -> label); set by Settings.load only.
_origins: ContextVar[Mapping[str, str]] = ContextVar(
    "synopsis_settings_origins", default=types.MappingProxyType({})
)


class Settings(SettingsFields):
    """The pipeline's options (see :meth:`reference` for the list). Build with keywords
    (``Settings(trigger="tokens:150000")``) or :meth:`load`; every problem raises
    :class:`~synopsis.errors.ConfigurationError`. ``model_validate`` raises pydantic's error
    instead: use the constructor."""

    def __init__(self, **data: object) -> None:
        try:
            super().__init__(**cast("dict[str, Any]", data))
        except ValidationError as error:
            message = explain(error, _origins.get(), type(self).model_fields)
            raise ConfigurationError(message) from None

    @model_validator(mode="before")
    @classmethod
    def _follow_the_trigger(cls, data: object) -> object:
        """A trigger fraction below the default's moves the aim and the landing with it:
        ``reset_ratio`` (unless it is set) and ``target_ratio`` (unless either is set) keep
        the defaults' proportions to the trigger (7/8 and 5/8 of it: 0.7 and 0.5 under 0.8), so that
        ``trigger=0.6`` aims under 0.525 and lands near 0.375 of the window."""
        # The landing follows the aim: one set by hand keeps the landing's default.
        following = ("reset_ratio", "target_ratio")
        if not isinstance(data, dict) or "reset_ratio" in data:
            return data
        fields = cls.model_fields
        default = fields["trigger"].default
        try:
            fraction = trigger_fraction(parse_trigger(data.get("trigger", default)))
        except ValueError:
            return data  # the trigger's own validation says what is wrong with it
        if fraction is None or fraction >= default:
            return data
        follows = fraction / default
        unset = {n: round(fields[n].default * follows, 6) for n in following if n not in data}
        return {**data, **unset}

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        problems: list[tuple[tuple[str, ...], str]] = []
        fraction = trigger_fraction(self.trigger_policy())
        if fraction is not None and self.reset_ratio >= fraction:
            problems.append(
                (
                    ("reset_ratio", "trigger"),
                    f"reset_ratio ({self.reset_ratio:g}) must be below the trigger's fraction "
                    f"({fraction:g}): it is the level a compaction aims for (leave it unset "
                    "and it follows the trigger)",
                )
            )
        window, reserve = self.context_window, self.reserve_output_tokens
        if window is not None and reserve is not None and reserve >= window:
            problems.append(
                (
                    ("reserve_output_tokens", "context_window"),
                    f"reserve_output_tokens ({reserve}) must be below context_window ({window})",
                )
            )
        if self.truncate_args and self.truncate_prefix + len(_MARKER) >= self.truncate_max_length:
            problems.append(
                (
                    ("truncate_prefix", "truncate_max_length"),
                    f"truncate_prefix ({self.truncate_prefix}) plus the {len(_MARKER)}-character "
                    f"marker must be shorter than truncate_max_length "
                    f"({self.truncate_max_length}), or cutting would not shorten anything",
                )
            )
        if problems:
            raise Problems(problems)
        return self

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        **overrides: object,
    ) -> Settings:
        """Settings from ``overrides`` over ``SYNOPSIS_<OPTION>`` variables of ``environ``
        (default ``os.environ``) over the TOML file at ``path`` (default: the file named by
        ``SYNOPSIS_CONFIG``, else none) over the defaults.

        The file's options sit in ``[synopsis]``, in ``[tool.synopsis]`` (a pyproject.toml),
        or at its top level. In the environment, lists are comma-separated and ``none``
        unsets an option. A ``None`` keyword is a value (it unsets), not "not given".
        """
        env = os.environ if environ is None else environ
        data: dict[str, object] = {}
        origins: dict[str, str] = {}
        if path is None and env.get("SYNOPSIS_CONFIG"):
            path = env["SYNOPSIS_CONFIG"]
            via = f"SYNOPSIS_CONFIG={path}"
        else:
            via = "" if path is None else os.fspath(path)
        if path is not None:
            for key, (value, label) in _read_toml(Path(path), via).items():
                data[key] = value
                origins[key] = label
        for key, value, label in _from_environment(env, cls.model_fields):
            data[key] = value
            origins[key] = label
        data.update(overrides)
        for key in overrides:
            origins.pop(key, None)
        token = _origins.set(origins)
        try:
            return cls(**data)
        finally:
            _origins.reset(token)

    # -- builders ------------------------------------------------------------------------------

    def trigger_policy(self) -> Trigger:
        """The trigger option as a :class:`~synopsis.planning.Trigger`."""
        return parse_trigger(self.trigger)

    def keep_policy(self) -> Keep:
        """The keep option as a :class:`~synopsis.planning.Keep`."""
        return parse_keep(self.keep)

    def governor(self) -> GovernorConfig:
        """The governor's options. Its ``trigger_ratio`` is the trigger's fraction, or 1.0
        for a trigger on tokens or messages alone (pass :meth:`trigger_policy` as the trigger:
        the ratio then only bounds the reset ratio)."""
        fraction = trigger_fraction(self.trigger_policy())
        return GovernorConfig(
            enabled=self.enabled,
            trigger_ratio=1.0 if fraction is None else fraction,
            reset_ratio=self.reset_ratio,
            min_messages=self.min_messages,
            cooldown_messages=self.cooldown_messages,
            emergency_ratio=self.emergency_ratio,
            max_passes=self.max_passes,
            min_tail_messages=self.min_tail_messages,
            max_per_turn=self.max_per_turn,
            breaker_failures=self.breaker_failures,
            min_savings=self.min_savings,
            refresh_after_messages=self.refresh_after_messages,
            refill_compactions=self.refill_compactions,
            refill_requests=self.refill_requests,
        )

    def protect(self) -> Protect:
        """What is never summarized."""
        return Protect(
            system=self.protect_system,
            first_user=self.protect_first_user,
            pinned=self.pinned,
            user_turns_tokens=self.user_turns_tokens,
        )

    def clearing(self) -> Clearing:
        """How the clearing tier runs, when the strategy has it."""
        return Clearing(
            keep_uses=self.clear_keep_uses,
            keep_tokens=self.clear_keep_tokens,
            at_least=self.clear_at_least,
            exclude_tools=frozenset(self.clear_exclude_tools),
            clear_inputs=self.clear_tool_inputs,
        )

    def reductions(self) -> Reductions:
        """Which cheap reductions run before any summarizing."""
        truncate = (
            TruncateArgs(
                tools=frozenset(self.truncate_tools),
                trigger=Trigger.fraction(self.truncate_trigger),
                keep_messages=self.truncate_keep_messages,
                max_length=self.truncate_max_length,
                prefix=self.truncate_prefix,
            )
            if self.truncate_args
            else None
        )
        return Reductions(
            truncate_args=truncate,
            dedupe_results=self.dedupe_results,
            dedupe_min_chars=self.dedupe_min_chars,
            dedupe_keep_messages=self.dedupe_keep_messages,
            message_threshold=self.message_threshold,
        )

    # -- text forms ----------------------------------------------------------------------------

    def to_toml(self, table: str = "synopsis") -> str:
        """Every option as a TOML table that :meth:`load` reads back to equal settings
        (unset options are left out, or written ``"none"`` where the default is set)."""
        values: dict[str, object] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None and info.default is None:
                continue
            values[name] = "none" if value is None else value
        return toml_table(table, values)

    @classmethod
    def reference(cls) -> list[tuple[str, str, str, str]]:
        """One row per option for the docs: name, type, default (as TOML, or ``unset``) and
        description."""
        return [
            (
                name,
                _type_text(info.annotation),
                "unset" if info.default is None else toml_value(info.default),
                info.description or "",
            )
            for name, info in cls.model_fields.items()
        ]


def _type_text(annotation: Any) -> str:  # noqa: ANN401 - any annotation pydantic holds
    origin = get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_text(a) for a in get_args(annotation))
    if origin is tuple:
        return f"list[{_type_text(get_args(annotation)[0])}]"
    if annotation is type(None):
        return "None"
    return str(annotation.__name__)


def _read_toml(path: Path, via: str) -> dict[str, tuple[object, str]]:
    """The options in the file at ``path``, each with the label naming where it came from."""
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigurationError(f"{via}: no such file") from None
    except OSError as error:
        raise ConfigurationError(f"{via}: cannot be read ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{via}: not valid TOML ({error})") from None
    tool = document.get("tool")
    if isinstance(tool, dict) and "synopsis" in tool:
        table, values = "[tool.synopsis] ", tool["synopsis"]
    elif "synopsis" in document:
        table, values = "[synopsis] ", document["synopsis"]
    elif path.name == "pyproject.toml":
        return {}  # a project's metadata, not options
    else:
        table, values = "", document
    if not isinstance(values, dict):
        raise ConfigurationError(f"{via}: {table.strip()} must be a table of options")
    shown = os.fspath(path)
    return {key: (value, f"{shown}: {table}{key}") for key, value in values.items()}


def _from_environment(
    env: Mapping[str, str], known: Mapping[str, object]
) -> list[tuple[str, str, str]]:
    """``(option, value, label)`` for each ``SYNOPSIS_<OPTION>`` variable in ``env``."""
    found: list[tuple[str, str, str]] = []
    unknown: list[str] = []
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX) or key in _ENV_NOT_OPTIONS:
            continue
        name = key.removeprefix(ENV_PREFIX).lower()
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            unknown.append(
                key + (f" (did you mean {ENV_PREFIX}{close[0].upper()}?)" if close else "")
            )
        else:
            # The key's own variable name is shown, never its value: it might be a secret.
            found.append((name, value, key if name == "api_key_env" else f"{key}={value}"))
    if unknown:
        raise ConfigurationError(
            f"unknown environment variable{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(sorted(unknown))}; synopsis reads {ENV_PREFIX}<OPTION> for its "
            f"options (such as {ENV_PREFIX}TRIGGER), SYNOPSIS_CONFIG and SYNOPSIS_DATA_DIR"
        )
    return found
