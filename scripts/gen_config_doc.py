"""Write docs/configuration.md from :meth:`synopsis.Settings.reference` (every option, its type,
default and source). ``python scripts/gen_config_doc.py`` rewrites the page; the test suite
checks that the committed page is what this script writes."""

from __future__ import annotations

from pathlib import Path

from synopsis import Settings
from synopsis.config import ENV_PREFIX

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

HEADER = f"""# Configuration reference

Every option can be given three ways, the first found winning:

1. by keyword: `synopsis.Compactor(trigger=0.75, keep="tokens:8000")` (also `compact()`);
2. by environment variable: `{ENV_PREFIX}TRIGGER=0.75`, `{ENV_PREFIX}KEEP=tokens:8000`
   (lists comma-separated; `none` or an empty value unsets an optional one);
3. by a TOML file: `Compactor(config="synopsis.toml")` or `{ENV_PREFIX}CONFIG=synopsis.toml`,
   with the options in a `[synopsis]` table (or `[tool.synopsis]` in a `pyproject.toml`).

A value out of range is refused with one sentence naming the option and where it came from,
for example `{ENV_PREFIX}TRIGGER=1.5: trigger must be a fraction in (0, 1], got 1.5`.
The source in brackets names the system an option was taken from, or synopsis itself: zrb,
mcpagent and adk-deepagents are open-source projects; "the chat-app plan" is a chat
application's design document and "the coding agent" a coding agent's. None of them ships with
synopsis; [lineage](lineage.md) describes each and what was taken from it.

| option | type | default | what it does (source) |
|---|---|---|---|
"""


def render() -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")  # a pipe would end the table cell

    rows = [
        f"| `{name}` | `{cell(kind)}` | `{cell(default)}` | {cell(text)} |"
        for name, kind, default, text in Settings.reference()
    ]
    return HEADER + "\n".join(rows) + "\n"


def main() -> None:
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.name}")


if __name__ == "__main__":
    main()
