"""Every fenced block of README.md, CONTRIBUTING.md and docs/ runs as written, or its page says
what it needs: a page cannot drift from the code without this test failing.

How a block is checked, by its language (the convention is in CONTRIBUTING.md):

- ``python``: a page's blocks run in order in one namespace, as a reader pasting them one after
  another into one interpreter would, so a block may use what an earlier block of the page
  defined. Each ``test_*`` function a block defines is called after it, as pytest would.
- ``sh``, ``bash``, ``shell``, ``console``: every command is ``synopsis ...`` or
  ``python -m synopsis ...`` (but ``serve``, which does not end) and runs in this process; it
  must exit 0. In a ``console`` block the commands are the lines that start with ``$ `` and the
  other lines are their output.
- ``toml``, ``json``: parsed; a TOML file with a ``[synopsis]`` table is loaded by
  ``Settings.load``.
- ``text`` or no language, right after a block that ran: that block's output, compared line
  for line.

Anything else (a key, a server, an agent's own CLI, ``pip install``, ``make``, output no block
of the page prints) has ``<!-- needs: WHAT; offline: THE LINE THAT CHANGES -->`` on the line
before its fence, and is not run. A page's blocks run in a fresh directory with
``SYNOPSIS_DATA_DIR`` inside it, so ``store="sqlite"`` writes there.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import shlex
import textwrap
import tomllib
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import synopsis
from synopsis.cli import main as synopsis_main

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
MARKER = re.compile(r"^\s*<!-- needs: (?P<needs>\S.*?) -->\s*$")
PYTHON = {"python", "py"}
SHELL = {"sh", "bash", "shell", "console"}
OUTPUT = {"text", ""}

# What a page's blocks print that its text promises, beyond any output block it shows.
PRINTED = {
    "README.md": [
        "False under-trigger",
        "message 2 part 0: tool call 'call_1' has no result in the next message [openai.C2]",
    ],
}


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # the opening fence's, counted from 1
    end: int  # the closing fence's
    lang: str
    text: str
    needs: str | None  # what the marker before the fence says the block needs

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of a Markdown page, in order."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    start = 0
    while start < len(lines):
        opening = FENCE.match(lines[start])
        if opening is None:
            start += 1
            continue
        fence = opening["fence"]
        end = start + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        assert end < len(lines), f"{page}:{start + 1}: a block that never closes"
        marker = MARKER.match(lines[start - 1]) if start else None
        body = textwrap.dedent("\n".join(lines[start + 1 : end]))
        found.append(
            Block(
                page,
                start + 1,
                end + 1,
                opening["lang"].lower(),
                body + "\n" if body else "",
                marker["needs"] if marker else None,
            )
        )
        start = end + 1
    return found


def _page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _unmarked(block: Block, why: str) -> AssertionError:
    return AssertionError(
        f"{block.where}: {why}. Make it run offline as written, or put "
        "'<!-- needs: WHAT; offline: THE LINE THAT CHANGES -->' on the line before its fence"
    )


@contextlib.contextmanager
def _as_a_user_sees_warnings(block: Block) -> Iterator[None]:
    """A framework's UserWarning (ADK's notice on an experimental class, say) is shown to a
    user, not raised: let it pass. One from synopsis is a defect of the page or the code."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", category=UserWarning)
        yield
    ours = [w for w in caught if w.category.__module__.partition(".")[0] == "synopsis"]
    assert not ours, f"{block.where}: synopsis warned: {ours[0].message}"


def _run_python(block: Block, namespace: dict[str, object]) -> list[str]:
    """Run the block in the page's namespace, then the tests it defined; their names."""
    # Blank lines in front, so that a traceback names the page's own line numbers.
    code = compile("\n" * block.line + block.text, block.page, "exec")
    before = {id(value) for name, value in namespace.items() if name.startswith("test_")}
    called: list[str] = []
    try:
        with _as_a_user_sees_warnings(block):
            exec(code, namespace)
            for name, value in list(namespace.items()):
                if name.startswith("test_") and callable(value) and id(value) not in before:
                    value()
                    called.append(name)
    except Exception as exc:
        raise AssertionError(f"{block.where}: the block fails: {exc!r}") from exc
    return called


def _commands(block: Block) -> Iterator[list[str]]:
    """The words of each command of a shell block, continuation lines joined, comments dropped."""
    lines = block.text.splitlines()
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    joined = "\n".join(lines).replace("\\\n", " ")
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            yield words


def _run_shell(block: Block) -> str:
    """Run the block's synopsis commands in this process; their output, as a shell shows it."""
    out = io.StringIO()
    for words in _commands(block):
        if words[:3] == ["python", "-m", "synopsis"]:
            args = words[3:]
        elif words[0] == "synopsis":
            args = words[1:]
        else:
            raise _unmarked(block, f"`{shlex.join(words)}` is not a synopsis command")
        if args[:1] == ["serve"]:
            raise _unmarked(block, f"`{shlex.join(words)}` starts a server")
        with contextlib.redirect_stdout(out), _as_a_user_sees_warnings(block):
            try:
                code = synopsis_main(args)
            except SystemExit as exit_:  # --help and --version end in argparse
                code = exit_.code if isinstance(exit_.code, int) else 2
        assert code == 0, f"{block.where}: `{shlex.join(words)}` exited {code}"
    return out.getvalue()


def _check_config(block: Block) -> None:
    try:
        data = json.loads(block.text) if block.lang == "json" else tomllib.loads(block.text)
    except ValueError as exc:
        raise AssertionError(f"{block.where}: not valid {block.lang}: {exc}") from exc
    if block.lang == "toml" and ("synopsis" in data or "synopsis" in data.get("tool", {})):
        path = Path(f"config-{block.line}.toml")  # in the page's directory of its own
        path.write_text(block.text, encoding="utf-8")
        try:
            synopsis.Settings.load(path, environ={})
        except synopsis.ConfigurationError as exc:
            raise AssertionError(f"{block.where}: Settings.load refuses it: {exc}") from exc


def _same_output(block: Block, printed: str) -> None:
    shown = [line.rstrip() for line in block.text.rstrip("\n").splitlines()]
    got = [line.rstrip() for line in printed.rstrip("\n").splitlines()]
    assert got == shown, f"{block.where}: the page shows output the block before does not print"


@dataclass(frozen=True)
class Ran:
    block: Block
    output: str
    tests: list[str]  # the test functions it defined, called


def check_page(path: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> list[Ran]:
    """Run or parse every block of the page at ``path`` in the current directory; the blocks
    that ran. Fails on the first block that fails, or does not run and is not marked."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran: list[Ran] = []
    last: Ran | None = None  # the block just before, if it ran
    for block in blocks(path, root):
        before, last = last, None
        tests: list[str] = []
        if block.needs is not None:
            continue
        if block.lang in PYTHON:
            capsys.readouterr()
            tests = _run_python(block, namespace)
            output = capsys.readouterr().out
        elif block.lang in SHELL:
            output = _run_shell(block)
            if block.lang == "console":
                shown = [line for line in block.text.splitlines() if not line.startswith("$ ")]
                _same_output(replace(block, text="\n".join(shown)), output)
        elif block.lang in {"toml", "json"}:
            _check_config(block)
            continue
        elif block.lang in OUTPUT and before is not None and before.block.end + 2 == block.line:
            _same_output(block, before.output)
            continue
        else:
            raise _unmarked(block, f"a ```{block.lang} block that no block before prints")
        last = Ran(block, output, tests)
        ran.append(last)
    return ran


@pytest.fixture
def event_loop_of_the_page() -> Iterator[None]:
    """A loop for pydantic-ai's ``run_sync``, closed after the page: run_sync keeps the
    thread's loop open, and a later ``asyncio.run`` would leave it to be collected unclosed (a
    user's script ends first; in the suite the warning would land on another test)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
@pytest.mark.usefixtures("event_loop_of_the_page")
def test_every_block_runs_or_says_what_it_needs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNOPSIS_DATA_DIR", str(tmp_path / "data"))
    ran = check_page(path, ROOT, capsys)
    for line in PRINTED.get(_page_id(path), []):
        assert any(line in r.output for r in ran), f"{_page_id(path)} no longer prints {line!r}"
    if _page_id(path) == "docs/testing.md":  # it says its blocks are pytest tests (or a fixture)
        for r in ran:
            assert r.tests or "@pytest.fixture" in r.block.text, f"{r.block.where}: no test in it"


PAGE = """# A page

<!-- needs: a key; offline: model = "test" -->
```sh
pip install something
```

```python
print("one", 1)
```

```text
one 1
```

```toml
[synopsis]
trigger = 0.75
```

```console
$ synopsis --version
synopsis {version}
```

{last}
"""


@pytest.mark.parametrize(
    ("last", "error"),
    [
        (
            "```sh\nsynopsis inspect missing.json\n```",
            "page.md:26: `synopsis inspect missing.json` exited 2",
        ),
        (
            "```sh\nmake demo  # a comment\n```",
            "page.md:26: `make demo` is not a synopsis command. Make it run",
        ),
        (
            "```bash\nsynopsis serve --port 1\n```",
            "page.md:26: `synopsis serve --port 1` starts a server",
        ),
        (
            "```python\nraise ValueError('boom')\n```",
            "page.md:26: the block fails: ValueError('boom')",
        ),
        (
            "```python\nprint(2)\n```\n\n```text\n3\n```",
            "page.md:30: the page shows output the block",
        ),
        ("```toml\ntrigger = 0.7 = 1\n```", "page.md:26: not valid toml"),
        ("```toml\n[synopsis]\nwindow_size = 7\n```", "page.md:26: Settings.load refuses it"),
        ("```json\n{'a': 1}\n```", "page.md:26: not valid json"),
        ("Words.\n\n```\nwords\n```", "page.md:28: a ``` block that no block before prints"),
    ],
)
def test_a_block_that_does_not_run_fails_with_its_page_and_line(
    last: str, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.md"
    page.write_text(PAGE.format(version=synopsis.__version__, last=last), encoding="utf-8")
    with pytest.raises(AssertionError, match=re.escape(error)):
        check_page(page, tmp_path, capsys)
    page.write_text(PAGE.format(version=synopsis.__version__, last="```sh\nsynopsis --help\n```"))
    assert "usage: synopsis" in check_page(page, tmp_path, capsys)[-1].output
