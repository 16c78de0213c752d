"""Configuration: :class:`Settings`, from keywords, a TOML file and ``SYNOPSIS_*`` variables.

:mod:`.settings` loads and validates; :mod:`.fields` declares each option with its default
and description (the source of ``docs/configuration.md``); :mod:`.text` reads and writes the
textual forms (trigger and keep strings, TOML).
"""

from __future__ import annotations

from synopsis.config.settings import ENV_PREFIX, Settings

__all__ = ["ENV_PREFIX", "Settings"]
