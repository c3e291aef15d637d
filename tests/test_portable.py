"""recall_kit.portable: the numbers that decide a rank or a grade come out the same whatever order
the CPU's kernels sum in; a study's manifest records the machine of each step, and `study status`
on another machine says which steps were computed elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recall_kit.machine import machine, machine_key, machine_summary
from recall_kit.portable import (
    GRID,
    fit_logistic,
    inner_products,
    on_grid,
    paired_inner_products,
    probabilities,
)
from recall_kit.study.pipeline.graph import Step, StudyGraph


def test_on_grid_by_hand() -> None:
    assert on_grid(0.5) == 0.5
    assert on_grid(GRID * 3.4) == GRID * 3
    assert on_grid(-GRID * 2.6) == -GRID * 3
    assert on_grid(np.array([GRID * 0.5, GRID * 1.5])).tolist() == [0.0, 2 * GRID]  # half to even
    assert (on_grid(np.linspace(-1, 1, 1001)) * 2**20 % 1 == 0).all()
    assert np.float32(on_grid(0.123456789)) == on_grid(0.123456789)  # exact in float32 too


def test_inner_products_do_not_depend_on_the_order_of_the_sum() -> None:
    """float32 sums in two orders (as two kernels make them) differ in last bits; the portable
    products of the same vectors do not."""
    rng = np.random.default_rng(1)
    left = rng.normal(size=(50, 384)).astype(np.float32)
    right = rng.normal(size=(80, 384)).astype(np.float32)
    order = rng.permutation(384)
    forward = left @ right.T
    permuted = left[:, order] @ right[:, order].T
    assert (forward != permuted).any()  # the float32 sums really do differ
    assert (inner_products(left, right) == inner_products(left[:, order], right[:, order])).all()
    assert (paired_inner_products(left[:3], right[:3]) == np.diag(inner_products(left[:3], right[:3]))).all()


def test_the_logistic_fit_converges_to_one_answer_in_any_row_order() -> None:
    """The rows shuffled change every sum the optimiser makes; scikit-learn's lbfgs stopped at its
    default tolerance then lands elsewhere, Newton to convergence on the same grid point."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    rows = rng.normal(size=(3000, 6)) * [1, 10, 0.1, 3, 1, 100]
    truth = (rows @ [1.0, 0.1, 5.0, -0.3, 0.0, 0.01] + rng.normal(size=3000) > 0).astype(int)
    order = rng.permutation(3000)
    first = probabilities(fit_logistic(rows, truth), rows)
    again = probabilities(fit_logistic(rows[order], truth[order]), rows)
    assert (first == again).all()
    loose = [LogisticRegression(max_iter=1000).fit(rows[o], truth[o]).predict_proba(rows)[:, 1]
             for o in (np.arange(3000), order)]
    assert (loose[0] != loose[1]).any()  # what the old fit did: the last bits followed the order


def test_the_machine_is_described_and_summarised() -> None:
    described = machine()
    assert described["cpu"] and described["numpy"] == np.__version__
    assert machine_key(described) == machine_key(dict(described)) and len(machine_key(described)) == 12
    other = {**described, "cpu": "AMD EPYC 9B14", "vector_extensions": "avx avx2 fma avx512f", "blas": "openblas 0.3.31 Zen"}
    assert machine_key(other) != machine_key(described)
    assert machine_summary(other) == "AMD EPYC 9B14, AVX512F, BLAS openblas 0.3.31 Zen"


def _graph(folder: Path) -> StudyGraph:
    def write(out: Path, inputs: dict[str, int]) -> None:
        (out / "n.txt").write_text(str(inputs["n"]), encoding="utf-8")

    return StudyGraph(folder, [Step("source", [], lambda: {"n": 3}, write)])


def test_status_says_which_steps_another_machine_computed(tmp_path: Path) -> None:
    graph = _graph(tmp_path)
    graph.run()
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    here = manifest["steps"]["source"]["machine"]
    assert manifest["machines"][here] == machine()
    assert [(s.state, s.why) for s in _graph(tmp_path).status()] == [("done", "")]
    # The same folder read on another machine: the step stays done (its fingerprint holds no machine)
    elsewhere = {"cpu": "AMD EPYC 9B14", "vector_extensions": "avx2 avx512f", "blas": "openblas 0.3.31 Zen"}
    manifest["machines"] = {"0123456789ab": elsewhere}
    manifest["steps"]["source"]["machine"] = "0123456789ab"
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    [state] = _graph(tmp_path).status()
    assert state.state == "done"
    assert state.why.startswith("computed on another machine (AMD EPYC 9B14, AVX512F, BLAS openblas 0.3.31 Zen); "
                                "its numbers are expected to match this machine's to the grid")
    assert _graph(tmp_path).run().computed == []  # nothing recomputed for it


# -- the example study under proxies for another CPU -----------------------------------------------


def _timings_aside(text: str) -> str:
    """The study document without what a clock measured (latency, step seconds)."""
    import re

    kept = []
    for line in text.splitlines():
        if re.match(r"\| (fts5|lexical|dense|hybrid|hybrid-graph) +\| +[0-9.]+ \| +[0-9.]+ \|", line):
            line = re.sub(r"\| +[0-9.]+ \| +[0-9.]+ \|", "| T | T |", line, count=1)
        line = re.sub(r"\b[0-9][0-9,]*\.[0-9]+ ms\b", "T ms", line)
        line = re.sub(r"\(x[0-9][0-9,.]*\)", "(xT)", line)
        line = re.sub(r"^(\| [a-z0-9/-]+ +\| +)[0-9.]+ \|$", r"\1T |", line)
        if line.startswith("|"):  # a table's column widths follow its widest value, a timing's too
            line = re.sub(r"-{3,}", "---", re.sub(r" {2,}", " ", line))
        kept.append(line)
    return "\n".join(kept)


def _study_under(proxy: str, folder: Path) -> str:
    """The example study's document (timings aside), run under `proxy` in a process of its own, on
    a cache of its own, so that every embedding is made afresh under it, holding only the ONNX
    export (linked, not made again)."""
    import os
    import shutil

    from study_support import run_example_study

    cache = folder / "cache"
    shutil.copytree(Path(os.environ["RECALL_KIT_CACHE"]) / "dense" / "onnx", cache / "dense" / "onnx",
                    copy_function=os.link)
    return _timings_aside((run_example_study(folder, proxy, cache) / "study.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example_document(example_study_run: Path) -> str:
    """The default: the session's run of the example study (tests/conftest.py), on the test run's cache."""
    return _timings_aside((example_study_run / "examples" / "study-out" / "study.md").read_text(encoding="utf-8"))


#: The proxies the suite runs, at once, in one whole study (~20 s of CPU under the suite's load):
#: torch, the other engine, for every embedding and the judge's vectors, each of them then a last bit
#: apart, and OpenBLAS's AVX2 kernels: a document that moved under any of them moves under all,
#: barring a cancellation (torch's arithmetic is already further from ONNX Runtime's than a last bit).
#: Each proxy alone, ONNX Runtime's path a last bit apart, unoptimised and on one thread among them,
#: is measured by benchmarks/bench_portability.py (`make bench`), with the same result (docs/study.md).
PROXIES_RUN = ["torch+last-bit+openblas-haswell"]


@pytest.mark.slow
@pytest.mark.xdist_group("example-study")
@pytest.mark.parametrize("proxy", PROXIES_RUN)
def test_the_example_study_is_the_same_document_under_each_proxy(proxy: str, tmp_path_factory: pytest.TempPathFactory,
                                                                  example_document: str) -> None:
    """Every embedding a last bit apart, OpenBLAS's AVX2 kernels, torch instead of ONNX Runtime:
    the same document, timings aside."""
    under = _study_under(proxy, tmp_path_factory.mktemp(proxy))
    if under != example_document:
        import difflib

        changed = [line for line in difflib.unified_diff(example_document.splitlines(), under.splitlines(), lineterm="")
                   if line.startswith(("+", "-"))]
        pytest.fail(f"{proxy}: the document differs:\n" + "\n".join(changed[:20]))
