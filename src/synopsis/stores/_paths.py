"""Where the SQLite store lives when the caller names no file: the user's data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DATABASE_NAME", "data_dir", "default_database_path"]

DATABASE_NAME = "synopsis.db"


def data_dir(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """``$SYNOPSIS_DATA_DIR``, else the platform's per-user data directory plus ``synopsis``:
    ``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux and other Unixes, ``~/Library/Application
    Support`` on macOS, ``%LOCALAPPDATA%`` on Windows. Not created here."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if env.get("SYNOPSIS_DATA_DIR"):
        return Path(env["SYNOPSIS_DATA_DIR"]).expanduser()
    home = Path.home()
    if platform == "win32":
        base = Path(env["LOCALAPPDATA"]) if env.get("LOCALAPPDATA") else home / "AppData" / "Local"
    elif platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        # The XDG spec says a relative value is invalid and must be ignored.
        xdg = env.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else home / ".local" / "share"
    return base / "synopsis"


def default_database_path(environ: Mapping[str, str] | None = None) -> Path:
    """``synopsis.db`` in :func:`data_dir`, whose directories are created if missing."""
    directory = data_dir(environ)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / DATABASE_NAME
