"""No import cycle among recall-kit's modules (the host and every plugin package), found by a test
rather than by a reader: grimp (under import-linter) sees every import statement, those inside
functions included, and those under `if TYPE_CHECKING:`, and every one of them counts: a type the
checker needs from a module that imports this one belongs in a third module both import (as
`LegRun` and `FusedRun` live in measure/run/runs.py, not in the runner)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two modules or more (or a module importing itself), each
    sorted: Tarjan's algorithm, iterative, over `edges`."""
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
                if child not in edges:
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
    edges = _edges(_graph())
    found = cycles(edges)
    assert not found, "Import cycles (function-level and type-only imports count too):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in found)


def test_type_only_imports_are_in_the_graph():
    # Not vacuous for type-only imports: the graph holds the ones under `if TYPE_CHECKING:`.
    import grimp

    typed = _edges(_graph())
    run_time = _edges(grimp.build_graph(*_roots(), cache_dir=None, exclude_type_checking_imports=True))
    assert "recall_kit.measure.run.runs" in typed["recall_kit.measure.run.failures"]
    assert "recall_kit.measure.run.runs" not in run_time["recall_kit.measure.run.failures"]


def test_the_cycle_check_catches_a_function_level_cycle():
    # Not vacuous: the graph holds function-level imports, and a planted one closes a cycle.
    graph = _graph()
    edges = _edges(graph)
    assert "recall_kit.decide.compare" in edges["recall_kit.decide.compare_report"]
    assert not any("recall_kit.decide.compare" in cycle for cycle in cycles(edges))
    # recall_kit/decide/score.py imports compare_values inside a function; grimp sees it.
    assert "recall_kit.decide.compare" in edges["recall_kit.decide.score"]
    graph.add_import(importer="recall_kit.decide.compare", imported="recall_kit.decide.compare_report",
                     line_number=1, line_contents="from recall_kit.decide.compare_report import tradeoffs")
    assert ["recall_kit.decide.compare", "recall_kit.decide.compare_report"] in cycles(_edges(graph))


def test_cycles_finds_long_loops_and_self_imports():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"d"}}
    assert sorted(cycles(edges)) == [["a", "b", "c"], ["e"]]
    del edges["c"]
    assert cycles(edges) == [["e"]]
