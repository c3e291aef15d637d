"""docs/README.md says which page answers which question (issue 70: 7,000 lines of docs and no
short path): every page is in it, every link in it and in README.md's first screen resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "README.md"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


def _links(page: Path) -> list[tuple[Path, str | None]]:
    return [((page.parent / target).resolve(), anchor)
            for target, anchor in _LINK.findall(page.read_text(encoding="utf-8")) if "://" not in target]


def test_the_index_lists_every_page_and_each_link_resolves() -> None:
    # the top-level pages and each folder's own README (docs/formats/README.md lists its pages)
    pages = {page.resolve() for page in [*(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*/README.md")]
             if page != INDEX}
    linked = _links(INDEX)
    assert sorted(str(page.relative_to(ROOT)) for page in pages - {target for target, _ in linked}) == []
    for target, anchor in linked:
        assert target.is_file(), target
        assert not anchor or anchor in _anchors(target), (target, anchor)


def test_the_readmes_first_screen_names_the_two_commands_and_where_next() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(readme.splitlines()[:40])
    assert "recall-kit study init --sqlite" in first_screen and "recall-kit study run study.toml" in first_screen
    assert "docs/README.md" in first_screen
    for target, _anchor in _links(ROOT / "README.md"):
        assert target.exists(), target
    assert "commit 3f6aafb" not in readme  # the timing history lives in docs/performance.md
