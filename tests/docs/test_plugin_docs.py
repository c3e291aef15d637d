"""The plugin docs tested against the code, as datasette's tests/test_docs.py tests its hook docs:
the reference lists exactly the declared plugin API (`recall_kit.plugin.__all__`), and the
tutorial's finished plugin is what `recall-kit new-plugin` writes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugin-guide.md"
TUTORIAL = ROOT / "docs" / "plugin-tutorial.md"


def _listed_names(text: str) -> set[str]:
    listed = text.split("<!-- plugin-api: begin -->", 1)[1].split("<!-- plugin-api: end -->", 1)[0]
    return {name for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", listed)}


def test_the_reference_lists_exactly_the_declared_plugin_api():
    import recall_kit.plugin

    listed = _listed_names(GUIDE.read_text(encoding="utf-8"))
    declared = set(recall_kit.plugin.__all__)
    assert sorted(declared - listed) == [], "in recall_kit.plugin.__all__ but not in the plugin guide"
    assert sorted(listed - declared) == [], "in the plugin guide's list but not in recall_kit.plugin.__all__"


def test_the_list_check_catches_a_name_left_out():
    text = "<!-- plugin-api: begin -->\n- `Hit`, `sort_hits` (ordering)\n<!-- plugin-api: end -->\n`Corpus`"
    assert _listed_names(text) == {"Hit", "sort_hits"}


def test_every_declared_name_and_every_library_name_imports():
    # Names other code is written against stay importable from both front doors.
    import recall_kit
    import recall_kit.plugin

    for module in (recall_kit.plugin, recall_kit):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"


def test_the_tutorials_plugin_is_what_new_plugin_writes():
    from recall_kit.scaffold import plugin_names, render_template

    text = TUTORIAL.read_text(encoding="utf-8")
    final = text.split("<!-- tutorial: final -->\n```python\n", 1)[1].split("\n```\n", 1)[0]
    assert final + "\n" == render_template("retriever.py", plugin_names("overlap"), "retriever")
    assert len(final.splitlines()) < 70
    # Each step's excerpt is a piece of the finished module (nothing taught that it does not do).
    steps = re.findall(r"## Step \d[^\n]*\n.*?```python\n(.*?)```", text.split("## The whole plugin")[0], flags=re.S)
    assert len(steps) == 5
    lines = {line.strip() for line in final.splitlines()}
    for excerpt in steps:
        for line in excerpt.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                assert line.strip() in lines or "hits = [Hit(doc_id" in line, line


def _first_lines(text: str, *starts: str) -> list[int]:
    lines = [line.strip() for line in text.splitlines()]
    return [next(number for number, line in enumerate(lines) if line.startswith(start)) for start in starts]


def test_the_tutorial_installs_before_it_tests_as_the_scaffolds_readme_says():
    # issue 70: the tutorial ran pytest before pip install -e, the scaffold's README the other way.
    tutorial = TUTORIAL.read_text(encoding="utf-8").split("recall-kit new-plugin overlap && cd", 1)[1]
    readme = (ROOT / "recall_kit" / "templates" / "plugin" / "readme_tail.md").read_text(encoding="utf-8")
    for text in (tutorial, readme):
        install, test = _first_lines(text, "pip install -", "pytest")
        assert install < test
