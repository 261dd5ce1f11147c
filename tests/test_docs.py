"""The documentation site builds, strictly: a broken link or anchor, or a page missing from
the nav, fails the build; and the README's links point at pages that exist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site)],
        cwd=config.parent, capture_output=True, text=True, env=env, timeout=300, check=False)


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    for page in (ROOT / "docs").glob("*.md"):
        assert page.stem == "index" or (site / page.stem / "index.html").is_file(), page.name


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    # The same configuration over a copy of the pages, one link pointing nowhere: the
    # check above would pass vacuously if strict mode did not look at anchors.
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in (ROOT / "docs").glob("*.md"):
        (docs / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    shutil.copytree(ROOT / "docs" / "hooks", docs / "hooks")
    with (docs / "scaling.md").open("a", encoding="utf-8") as f:
        f.write("\nSee [nothing](statistics.md#no-such-section).\n")
    (tmp_path / "mkdocs.yml").write_text(
        (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), encoding="utf-8")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-section" in done.stdout + done.stderr


def test_the_readme_links_to_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 13
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for link in links:
        assert (ROOT / link).is_file(), link
        assert Path(link).name in nav, link
