"""The wheel and the sdist ship the licence, the notice and every bundled file the notice
names (built here with the build backend itself, offline)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out


def _third_party(names: list[str]) -> list[str]:
    """The bundled data files among ``names``: vocabularies, the model table, transcripts."""
    return sorted(
        Path(n).name
        for n in names
        if n.endswith((".tiktoken.gz", "data/models.json"))
        or ("examples/transcripts/" in n and n.endswith(".jsonl"))
    )


def test_the_wheel_holds_the_licence_and_a_notice_naming_each_bundled_file(built: Path) -> None:
    (wheel,) = built.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        licences = {Path(n).name: archive.read(n).decode() for n in names if "/licenses/" in n}
    assert set(licences) == {"LICENSE", "NOTICE"}
    assert "Apache License" in licences["LICENSE"]
    assert "Version 2.0, January 2004" in licences["LICENSE"]
    bundled = _third_party(names)
    assert bundled == ["cl100k_base.tiktoken.gz", "models.json", "o200k_base.tiktoken.gz"]
    for name in bundled:
        assert name in licences["NOTICE"]


def test_the_sdist_holds_them_too_and_the_transcripts_the_tests_read(built: Path) -> None:
    (sdist,) = built.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        top = f"{names[0].split('/')[0]}/"
        notice = archive.extractfile(f"{top}NOTICE")
        assert notice is not None
        text = notice.read().decode()
    assert f"{top}LICENSE" in names
    transcripts = sorted(p.name for p in (ROOT / "examples" / "transcripts").glob("*.jsonl"))
    bundled = _third_party(names)
    assert set(transcripts) <= set(bundled)
    for name in bundled:
        assert name.removesuffix(".jsonl") in text
