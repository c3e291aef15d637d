"""No import cycle among recall-kit's modules (the host and every plugin package), found by a test
rather than by a reader: grimp (under import-linter) sees every import statement, those inside
functions included, and those under `if TYPE_CHECKING:`; a type-only one that closes a cycle must
be labelled in TYPE_ONLY below, with why it is there."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Imports that exist for the type checker alone (under `if TYPE_CHECKING:`), each with why. They run
#: never, so they close no cycle at run time; every other import counts.
TYPE_ONLY: dict[tuple[str, str], str] = {
    # `recall_kit/__init__.py` names its lazily loaded API (run_benchmark, compare, ...) for mypy and
    # editors; at run time each loads on first use, from the layer that defines it.
    **{("recall_kit", module): "recall_kit's lazy API, named for the type checker"
       for module in ("recall_kit.curate.export", "recall_kit.curate.importers", "recall_kit.curate.pool",
                      "recall_kit.dataset", "recall_kit.decide.ablate", "recall_kit.decide.compare",
                      "recall_kit.decide.gate", "recall_kit.decide.score", "recall_kit.decide.sweep",
                      "recall_kit.measure.score.evaluation", "recall_kit.measure.result", "recall_kit.measure.run.runner",
                      "recall_kit.measure.systems.system")},
    # fingerprint.py hashes Memory objects; types.py's Corpus calls it on first use.
    ("recall_kit.fingerprint", "recall_kit.types"): "the Memory type of fingerprint_memories' argument",
    # diagnostics.py reads the runner's LegRun and FusedRun; the runner calls diagnose().
    ("recall_kit.measure.run.diagnostics", "recall_kit.measure.run.runner"): "the types of diagnose's arguments",
    # failures.py reads the runner's LegRun; the runner calls check_failed_queries().
    ("recall_kit.measure.run.failures", "recall_kit.measure.run.runner"): "the LegRun type of the failed-query checks",
}


def _roots() -> list[str]:
    packages = sorted(path.parent.name for folder in ("plugins", "examples")
                      for path in (ROOT / folder).glob("recall-kit-*/recall_kit_*/__init__.py"))
    return ["recall_kit", *packages]


def _graph():
    import grimp

    return grimp.build_graph(*_roots(), cache_dir=None, exclude_type_checking_imports=False)


def _edges(graph) -> dict[str, set[str]]:
    return {module: set(graph.find_modules_directly_imported_by(module)) & graph.modules
            for module in graph.modules}


def cycles(edges: dict[str, set[str]], type_only: Iterable[tuple[str, str]] = ()) -> list[list[str]]:
    """Every strongly connected set of two modules or more (or a module importing itself), each
    sorted: Tarjan's algorithm, iterative, over `edges` less the `type_only` imports."""
    skip = set(type_only)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if (node, child) in skip or child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1 or node in edges[node]:
                        found.append(sorted(members))
    return found


def test_no_import_cycle_among_recall_kit_modules():
    graph = _graph()
    edges = _edges(graph)
    found = cycles(edges, TYPE_ONLY)
    assert not found, "Import cycles (function-level imports count too):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in found)


def test_every_type_only_label_is_still_needed_and_type_only():
    # A label outlives its import, or hides a run-time one: both fail here.
    typed = _edges(_graph())
    import grimp

    run_time = _edges(grimp.build_graph(*_roots(), cache_dir=None, exclude_type_checking_imports=True))
    for importer, imported in TYPE_ONLY:
        assert imported in typed[importer], f"{importer} no longer imports {imported}: drop its label"
        assert imported not in run_time[importer], f"{importer} imports {imported} at run time: not type-only"


def test_the_cycle_check_catches_a_function_level_cycle():
    # Not vacuous: the graph holds function-level imports, and a planted one closes a cycle.
    graph = _graph()
    edges = _edges(graph)
    assert "recall_kit.decide.compare" in edges["recall_kit.decide.compare_report"]
    assert not any("recall_kit.decide.compare" in cycle for cycle in cycles(edges, TYPE_ONLY))
    # recall_kit/decide/score.py imports compare_values inside a function; grimp sees it.
    assert "recall_kit.decide.compare" in edges["recall_kit.decide.score"]
    graph.add_import(importer="recall_kit.decide.compare", imported="recall_kit.decide.compare_report",
                     line_number=1, line_contents="from recall_kit.decide.compare_report import tradeoffs")
    assert ["recall_kit.decide.compare", "recall_kit.decide.compare_report"] in cycles(_edges(graph), TYPE_ONLY)


def test_cycles_finds_long_loops_and_self_imports():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"d"}}
    assert sorted(cycles(edges)) == [["a", "b", "c"], ["e"]]
    assert cycles(edges, [("c", "a")]) == [["e"]]
