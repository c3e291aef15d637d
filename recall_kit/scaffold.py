"""`recall-kit new-plugin`: write a working plugin package skeleton (no cookiecutter needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from recall_kit.errors import RecallKitError

KINDS: tuple[str, ...] = ("retriever", "fusion", "metric", "reporter")

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_PREFIX = "recall-kit-"


class ScaffoldError(RecallKitError):
    """A bad plugin name or kind, or a folder that already exists."""


@dataclass(frozen=True)
class PluginNames:
    """The names of a new plugin, all derived from the one the user gave."""

    #: The registered name: `--retriever NAME`, `--fusion NAME`, `NAME@10`, `--report NAME`.
    name: str
    #: The distribution: recall-kit-NAME.
    distribution: str
    #: The import name: recall_kit_NAME (dashes become underscores).
    module: str
    #: CamelCase stem for class names: my-thing -> MyThing.
    class_stem: str


def plugin_names(name: str) -> PluginNames:
    """Check `name` (lowercase letters, digits, single dashes) and derive the other names.

    A leading `recall-kit-` is dropped, so `recall-kit-tfidf` and `tfidf` give the same package.
    """
    bare = name.removeprefix(_PREFIX)
    if not _NAME.match(bare):
        raise ScaffoldError(
            f"Bad plugin name {name!r}: use lowercase letters, digits and single dashes "
            "(e.g. 'tfidf' or 'my-retriever')."
        )
    return PluginNames(
        name=bare,
        distribution=_PREFIX + bare,
        module="recall_kit_" + bare.replace("-", "_"),
        class_stem="".join(part.capitalize() for part in bare.split("-")),
    )


def create_plugin(name: str, kind: str = "retriever", directory: str | Path = ".") -> Path:
    """Write the package `recall-kit-NAME/` under `directory` and return its path.

    The package holds a pyproject.toml with the `recall_kit` entry point, the module, a README and
    tests that pass as written (for a retriever, the conformance suite too). An existing folder is
    never overwritten.
    """
    if kind not in KINDS:
        raise ScaffoldError(f"Unknown plugin kind {kind!r}. Available: {', '.join(KINDS)}.")
    names = plugin_names(name)
    root = Path(directory) / names.distribution
    if root.exists():
        raise ScaffoldError(f"{root} already exists; choose another name or --dir (nothing was written).")
    files = {
        "pyproject.toml": _PYPROJECT,
        "README.md": _README_HEAD + _README[kind] + _README_TAIL,
        f"{names.module}/__init__.py": _MODULES[kind],
        f"{names.module}/py.typed": "",
        f"tests/test_{names.module}.py": _TESTS[kind],
    }
    if kind == "retriever":
        files["tests/test_conformance.py"] = _CONFORMANCE
    rendered = {path: _render(text, names, kind) for path, text in files.items()}
    for relative, text in rendered.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def _render(template: str, names: PluginNames, kind: str) -> str:
    replacements = {
        "{{name}}": names.name,
        "{{distribution}}": names.distribution,
        "{{module}}": names.module,
        "{{Class}}": names.class_stem,
        "{{function}}": names.module.removeprefix("recall_kit_"),
        "{{kind}}": kind,
        "{{hook}}": f"register_{kind}s",
    }
    for placeholder, value in replacements.items():
        template = template.replace(placeholder, value)
    return template


_PYPROJECT = '''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{{distribution}}"
version = "0.1.0"
description = "The `{{name}}` {{kind}} for recall-kit."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["recall-kit>=0.1"]

[project.optional-dependencies]
test = ["pytest>=8"]

# recall-kit finds the plugin through this entry point once the package is installed.
[project.entry-points.recall_kit]
{{name}} = "{{module}}"

[tool.setuptools]
packages = ["{{module}}"]

[tool.setuptools.package-data]
{{module}} = ["py.typed"]

[tool.pytest.ini_options]
addopts = "-p no:cacheprovider --import-mode=importlib"
testpaths = ["tests"]
# Tests import the package from this folder, installed or not.
pythonpath = ["."]
# recall_kit.testing: tests see only recall-kit's built-ins and the plugins they register.
recall_kit_isolate_plugins = true

[tool.ruff]
line-length = 100
'''

_README_HEAD = '''\
# {{distribution}}

The `{{name}}` {{kind}} for [recall-kit](https://github.com/recall-kit/recall-kit).

'''

_README_TAIL = '''
## Develop

```bash
pip install -e ".[test]"
pytest
recall-kit plugins          # lists {{distribution}} once installed
```

The tests register the plugin with the `recall_kit_plugin` fixture from `recall_kit.testing`
(recall-kit's pytest plugin), so they pass before the package is installed too.

## Publish

```bash
python -m pip install build twine
python -m build
twine upload dist/*
```

After `pip install {{distribution}}`, nothing else is needed: recall-kit discovers the
`recall_kit` entry point `{{name}}`.
'''

_README = {
    "retriever": '''\
```bash
recall-kit eval --dataset example:memories --retriever {{name}}
recall-kit eval --dataset example:memories --retriever fts5+{{name}} --fusion rrf
```

It scores a memory by the share of the query's distinct words that the memory contains: a
starting point, to be replaced by your own retrieval. `tests/test_conformance.py` runs
recall-kit's retriever conformance suite on it.

## Options

| option | type | default | meaning |
|---|---|---|---|
| `{{name}}.min_shared` | int | 1 | memories sharing fewer query words are not returned |
''',
    "fusion": '''\
```bash
recall-kit eval --dataset example:memories --retriever fts5+dense --fusion {{name}}
```

Weighted Borda count: in each leg, the document at rank r of a list cut at depth d gets
`weight * (d + 1 - r)` points; documents are ranked by their total.

## Options

| option | type | default | meaning |
|---|---|---|---|
| `{{name}}.depth_factor` | int | 2 | each leg returns `depth_factor * k` hits |
''',
    "metric": '''\
```bash
recall-kit eval --dataset example:memories --retriever fts5 --metrics {{name}}@10,recall@10
```

`{{name}}@k`: how many relevant documents (grade >= 1) the top k holds, per query.
''',
    "reporter": '''\
```bash
recall-kit eval --dataset example:memories --retriever fts5 --report {{name}}
```

Tab-separated values: each table as a `# title` line, a header row and its rows, tables separated
by a blank line. Tabs and newlines inside cells become spaces.
''',
}

_MODULES = {
    "retriever": '''\
"""{{distribution}}: the `{{name}}` retriever for recall-kit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import recall_kit
from recall_kit import Corpus, Hit, Retriever, sort_hits

_WORD = re.compile(r"\\w+")


def words(text: str) -> set[str]:
    """The distinct case-folded words of `text`; quotes, operators and emoji are separators."""
    return set(_WORD.findall(text.casefold()))


class {{Class}}Retriever(Retriever):
    """Scores a memory by the share of the query's distinct words it contains."""

    description = "share of the query's words a memory contains"

    @dataclass(frozen=True)
    class Options:
        #: Memories sharing fewer query words than this are not returned.
        min_shared: int = 1

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._index: list[tuple[str, set[str]]] = []

    def build_index(self, corpus: Corpus) -> None:
        self._index = [(memory.id, words(memory.searchable_text)) for memory in corpus]

    def search(self, query: str, k: int) -> list[Hit]:
        terms = words(query)
        if not terms:
            return []
        least = max(self.options.min_shared, 1)
        hits = [
            Hit(doc_id, len(terms & doc_words) / len(terms))
            for doc_id, doc_words in self._index
            if len(terms & doc_words) >= least
        ]
        return sort_hits(hits)[:k]  # best first, ties by id as trec_eval orders them

    def index_size_bytes(self) -> int | None:
        size = sum(len(word.encode("utf-8")) for _, doc_words in self._index for word in doc_words)
        return size or None


@recall_kit.hookimpl
def register_retrievers(register: Callable[[str, Any], None]) -> None:
    """Register the `{{name}}` retriever."""
    register("{{name}}", {{Class}}Retriever)
''',
    "fusion": '''\
"""{{distribution}}: the `{{name}}` fusion for recall-kit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import recall_kit
from recall_kit import Fusion, FusionRequest, Hit, sort_hits


class {{Class}}Fusion(Fusion):
    """Weighted Borda count.

    Each leg is cut at depth d = depth(k); the document at rank r gets ``weight * (d + 1 - r)``
    points, and documents are ranked by their total. Reference: de Borda (1781); Aslam and
    Montague, "Models for metasearch", SIGIR 2001.
    """

    description = "weighted Borda count over the legs' rankings"

    @dataclass(frozen=True)
    class Options:
        #: Each leg returns depth_factor * k hits.
        depth_factor: int = 2

        def __post_init__(self) -> None:
            if self.depth_factor < 1:
                raise ValueError("depth_factor must be >= 1")

    def depth(self, k: int) -> int:
        return k * self.options.depth_factor

    def fuse(self, request: FusionRequest) -> list[Hit]:
        depth = self.depth(request.k)
        points: dict[str, float] = {}
        for leg, hits in request.legs.items():
            weight = request.weights.get(leg, 1.0)
            for rank, hit in enumerate(hits[:depth], start=1):
                points[hit.id] = points.get(hit.id, 0.0) + weight * (depth + 1 - rank)
        fused = [Hit(doc_id, score) for doc_id, score in points.items() if score > 0]
        return sort_hits(fused)[: request.k]


@recall_kit.hookimpl
def register_fusions(register: Callable[[str, Any], None]) -> None:
    """Register the `{{name}}` fusion."""
    register("{{name}}", {{Class}}Fusion)
''',
    "metric": '''\
"""{{distribution}}: the `{{name}}` metric for recall-kit (`{{name}}@10`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import recall_kit
from recall_kit import JudgedRankings, Metric


def {{function}}_at_k(data: JudgedRankings, cutoff: int | None) -> np.ndarray:
    """Per query, the number of relevant documents (grade >= 1) in the top `cutoff`."""
    if cutoff is None or cutoff < 1:
        raise ValueError("{{name}} needs a cutoff >= 1, e.g. {{name}}@10")
    return data.relevant[:, :cutoff].sum(axis=1).astype(np.float64)


METRIC = Metric(
    name="{{name}}",
    compute={{function}}_at_k,
    cutoff="required",
    description="number of relevant documents in the top k",
)


@recall_kit.hookimpl
def register_metrics(register: Callable[[str, Any], None]) -> None:
    """Register the `{{name}}` metric family."""
    register("{{name}}", METRIC)
''',
    "reporter": '''\
"""{{distribution}}: the `{{name}}` reporter for recall-kit (`--report {{name}}`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import recall_kit
from recall_kit import Report, Reporter


def _cell(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


class {{Class}}Reporter(Reporter):
    """Tab-separated values: per table a `# title` line, the headers, the rows."""

    description = "tab-separated values, one block per table"

    def render(self, report: Report) -> str:
        blocks = []
        for table in report.tables:
            lines = [f"# {_cell(table.title)}", "\\t".join(_cell(h) for h in table.headers)]
            lines += ["\\t".join(_cell(value) for value in row) for row in table.rows]
            blocks.append("\\n".join(lines) + "\\n")
        return "\\n".join(blocks)


@recall_kit.hookimpl
def register_reporters(register: Callable[[str, Any], None]) -> None:
    """Register the `{{name}}` reporter."""
    register("{{name}}", {{Class}}Reporter)
''',
}

_TESTS = {
    "retriever": '''\
"""The `{{name}}` retriever: registration, a ranking worked out by hand, a real run."""

from recall_kit import load_dataset, registry, run_benchmark

import {{module}}
from {{module}} import {{Class}}Retriever


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin({{module}})
    assert registry.retrievers.get("{{name}}").obj is {{Class}}Retriever


def test_ranks_by_the_share_of_query_words(recall_kit_corpus):
    retriever = {{Class}}Retriever()
    retriever.build_index(recall_kit_corpus)
    hits = retriever.search("rotate the Driftwood API keys", 3)
    # Memory 4 holds all five words; memory 5 holds "driftwood" and "the": 2 of 5.
    assert [hit.id for hit in hits[:2]] == ["4", "5"]
    assert [hit.score for hit in hits[:2]] == [1.0, 0.4]


def test_min_shared_option(recall_kit_corpus):
    retriever = {{Class}}Retriever({{Class}}Retriever.Options(min_shared=3))
    retriever.build_index(recall_kit_corpus)
    assert [hit.id for hit in retriever.search("rotate the Driftwood API keys", 10)] == ["4"]


def test_a_real_run(recall_kit_plugin, recall_kit_dataset):
    recall_kit_plugin({{module}})
    result = run_benchmark("{{name}}", load_dataset(recall_kit_dataset), k=5,
                           metrics=["mrr"], latency_sample=0)
    queries = {query.query_id: query for query in result.queries}
    assert queries["exact_keys"].ranking[0] == "4"
    assert queries["exact_keys"].metrics["mrr"] == 1.0
''',
    "fusion": '''\
"""The `{{name}}` fusion: registration and a fused ranking worked out by hand."""

import pytest
from recall_kit import FusionRequest, Hit, Query, registry

import {{module}}
from {{module}} import {{Class}}Fusion


def request(corpus, weights, k=2):
    return FusionRequest(
        query=Query("q1", "any text"),
        legs={"a": [Hit("1", 9.0), Hit("2", 5.0)], "b": [Hit("2", 0.9), Hit("3", 0.1)]},
        weights=weights,
        ranking=None,
        corpus=corpus,
        k=k,
    )


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin({{module}})
    assert registry.fusions.get("{{name}}").obj is {{Class}}Fusion


def test_borda_points_by_hand(recall_kit_corpus):
    # k = 3, depth = 6: rank 1 gets 6 points, rank 2 gets 5.
    # "1": 6 (a); "2": 5 (a) + 6 (b) = 11; "3": 5 (b).
    fused = {{Class}}Fusion().fuse(request(recall_kit_corpus, {"a": 1.0, "b": 1.0}, k=3))
    assert fused == [Hit("2", 11.0), Hit("1", 6.0), Hit("3", 5.0)]


def test_weights_and_k(recall_kit_corpus):
    # k = 2, depth = 4; b weighs 0: "2" keeps only a's 3 points and falls behind "1" (4).
    fused = {{Class}}Fusion().fuse(request(recall_kit_corpus, {"a": 1.0, "b": 0.0}, k=2))
    assert fused == [Hit("1", 4.0), Hit("2", 3.0)]


def test_depth_factor_option():
    assert {{Class}}Fusion({{Class}}Fusion.Options(depth_factor=3)).depth(10) == 30
    with pytest.raises(ValueError):
        {{Class}}Fusion.Options(depth_factor=0)
''',
    "metric": '''\
"""The `{{name}}` metric: registration and values worked out by hand."""

import numpy as np
from recall_kit import registry
from recall_kit.measure.evaluation import evaluate, judge_rankings, resolve_metrics

import {{module}}
from {{module}} import {{function}}_at_k

QRELS = {"q1": {"a": 1, "c": 2, "z": 1, "b": 0}, "q2": {"y": 1}}
RANKINGS = [["a", "b", "c"], ["x"]]


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin({{module}})
    assert registry.metrics.get("{{name}}").obj is {{module}}.METRIC


def test_counts_relevant_documents_in_the_top_k():
    data = judge_rankings(["q1", "q2"], RANKINGS, QRELS)
    # q1: top 2 = a (relevant), b (judged 0) -> 1; top 3 adds c (grade 2) -> 2. q2: x -> 0.
    assert {{function}}_at_k(data, 2).tolist() == [1.0, 0.0]
    assert {{function}}_at_k(data, 3).tolist() == [2.0, 0.0]


def test_through_the_host_by_name(recall_kit_plugin):
    recall_kit_plugin({{module}})
    data = judge_rankings(["q1", "q2"], RANKINGS, QRELS)
    values = evaluate(data, resolve_metrics(["{{name}}@3"]))
    np.testing.assert_array_equal(values["{{name}}@3"], [2.0, 0.0])
''',
    "reporter": '''\
"""The `{{name}}` reporter: registration and output written out by hand."""

from recall_kit import Report, ReportTable, registry

import {{module}}
from {{module}} import {{Class}}Reporter


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin({{module}})
    assert registry.reporters.get("{{name}}").obj is {{Class}}Reporter


def test_renders_tables_as_tab_separated_values():
    report = Report(title="t", tables=[
        ReportTable(title="overall", headers=["system", "recall@10"], rows=[["fts5", 0.5]]),
        ReportTable(title="strata", headers=["stratum", "n"], rows=[["exact\\tstrict", 3]]),
    ])
    assert {{Class}}Reporter().render(report) == (
        "# overall\\nsystem\\trecall@10\\nfts5\\t0.5\\n"
        "\\n"
        "# strata\\nstratum\\tn\\nexact strict\\t3\\n"
    )
''',
}

_CONFORMANCE = '''\
"""The `{{name}}` retriever passes recall-kit's retriever conformance suite."""

from recall_kit.testing import RetrieverConformance

from {{module}} import {{Class}}Retriever


class Test{{Class}}Conformance(RetrieverConformance):
    retriever_factory = {{Class}}Retriever
'''
