"""`recall-kit ablate`: single legs, leave-one-outs and the full system from one search per leg,
each result written and reproducible by a plain `eval`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit import load_result
from recall_kit.decide.ablate import variant_legs
from recall_kit.fileio import file_name
from recall_kit.measure.result_sections import SystemInfo
from recall_kit.measure.systems.system import SystemSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memories"
PLUGINS = "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion"

OVERLAP = '''
import re
from dataclasses import dataclass
import recall_kit
from recall_kit.types import Hit, sort_hits


class Overlap(recall_kit.Retriever):
    """Scores a memory by how many distinct query words it holds."""

    @dataclass(frozen=True)
    class Options:
        min_length: int = 1

    def build_index(self, corpus):
        self.docs = [(m.id, {w for w in re.findall(r"\\w+", m.searchable_text.lower())
                             if len(w) >= self.options.min_length}) for m in corpus]

    def search(self, query, k):
        words = set(re.findall(r"\\w+", query.lower()))
        return sort_hits([Hit(d, float(len(words & ws))) for d, ws in self.docs if words & ws])[:k]
'''


def test_variants_by_hand():
    assert variant_legs(["a", "b"]) == [("full", ["a", "b"]), ("single leg", ["a"]), ("single leg", ["b"])]
    assert variant_legs(["a", "b", "c"]) == [
        ("full", ["a", "b", "c"]),
        ("leave-one-out", ["b", "c"]), ("leave-one-out", ["a", "c"]), ("leave-one-out", ["a", "b"]),
        ("single leg", ["a"]), ("single leg", ["b"]), ("single leg", ["c"]),
    ]
    spec = SystemSpec("a+b+c", ["rrf"], {"a": 2.0, "c": 0.5}, {"rrf": {"k": "10"}, "a": {"x": "1"}, "c": {"y": "2"}})
    pair = spec.subset(["a", "c"])
    assert pair.to_dict() == {"retriever": "a+c", "fusions": ["rrf"], "weights": {"a": 2.0, "c": 0.5},
                              "options": {"rrf": {"k": "10"}, "a": {"x": "1"}, "c": {"y": "2"}}}
    single = spec.subset(["c"])  # a single leg is its own ranking: no fusion, no fusion options
    assert single.to_dict() == {"retriever": "c", "fusions": [], "weights": {"c": 0.5},
                                "options": {"c": {"y": "2"}}}
    assert file_name("fts5+pkg.mod:Class") == "fts5+pkg.mod_Class.json"


def _cli(args: list[str], pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": PLUGINS, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def ablation(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("ablate_e2e")
    (folder / "ablate_overlap.py").write_text(OVERLAP)
    out = folder / "out"
    done = _cli(["ablate", "-d", str(EXAMPLE), "-r", "fts5+bm25+ablate_overlap:Overlap", "-f", "rrf",
                 "--weights", "ablate_overlap:Overlap=0.5", "-m", "recall@10,ndcg@10", "--out-dir", str(out),
                 "--resamples", "2000", "--latency-sample", "5"], folder)
    assert done.returncode == 0, done.stderr
    return folder, out, done


def test_ablate_writes_every_variant(ablation):
    _, out, done = ablation
    index = json.loads((out / "ablation.json").read_text())
    names = [v["name"] for v in index["variants"]]
    assert names == ["fts5+bm25+ablate_overlap:Overlap", "bm25+ablate_overlap:Overlap",
                     "fts5+ablate_overlap:Overlap", "fts5+bm25", "fts5", "bm25", "ablate_overlap:Overlap"]
    for variant in index["variants"]:
        result = load_result(out / variant["file"])
        assert result.manifest.seed == 0 and result.manifest.recall_kit is not None
        assert result.system.spec == variant["name"]
    assert (out / "fts5+bm25.json").exists() and (out / "ablate_overlap_Overlap.json").exists()
    # The leave-one-out keeps the full system's weights; a single leg is unfused.
    loo = load_result(out / "fts5+ablate_overlap_Overlap.json")
    assert loo.system.weights == {"fts5": 1.0, "ablate_overlap:Overlap": 0.5}
    assert load_result(out / "fts5.json").system.fusion == ()
    # The printed table: every variant, deltas with significance marks, the leg attribution.
    assert "Ablation of fts5+bm25+ablate_overlap:Overlap" in done.stdout
    assert "What each leg contributed" in done.stdout and "relevant only it found" in done.stdout
    assert "significant" in done.stdout
    rows = index["comparison"]["rows"]
    assert {r["system"] for r in rows} == set(names[1:])


def test_ablation_numbers_are_reproduced_by_eval(ablation):
    folder, out, _ = ablation
    for name, args in (("fts5+bm25", ["-r", "fts5+bm25", "-f", "rrf"]), ("bm25", ["-r", "bm25"])):
        fresh = folder / f"fresh_{name}.json"
        done = _cli(["eval", "-d", str(EXAMPLE), *args, "-m", "recall@10,ndcg@10", "--json", str(fresh),
                     "--latency-sample", "0"], folder)
        assert done.returncode == 0, done.stderr
        mine, theirs = load_result(out / file_name(name)), load_result(fresh)
        assert mine.rankings() == theirs.rankings()
        assert mine.means() == theirs.means()


def test_ablate_refuses_a_single_leg(tmp_path):
    done = _cli(["ablate", "-d", str(EXAMPLE), "-r", "bm25", "--out-dir", str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2 and "two legs or more" in done.stderr


def test_an_ablation_interrupted_while_writing_leaves_nothing(tmp_path, monkeypatch):
    # Ctrl-C (or SIGTERM) after 5 of 7 variant files: before, 5 files and no ablation.json stayed.
    # Now the set is written all or nothing, and nothing is left to resume or clean by hand.
    from helpers import OverlapPlugin

    from recall_kit import Retriever, hookimpl
    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.measure.result import BenchmarkResult
    from recall_kit.testing import registered_plugin

    class Other(Retriever):
        def build_index(self, corpus):  # type: ignore[no-untyped-def]
            self.ids = corpus.ids

        def search(self, query, k):  # type: ignore[no-untyped-def]
            from recall_kit import Hit

            return [Hit(i, 1.0 / (n + 1)) for n, i in enumerate(self.ids[:k])]

    class Plugins:
        @hookimpl
        def register_retrievers(self, register):  # type: ignore[no-untyped-def]
            register("first", Other)
            register("second", Other)

    saved = []
    original = BenchmarkResult.save

    def save(self, path):  # type: ignore[no-untyped-def]
        if len(saved) == 4:
            raise KeyboardInterrupt
        saved.append(path)
        original(self, path)

    monkeypatch.setattr(BenchmarkResult, "save", save)
    out = tmp_path / "out"
    recall_kit_fusion = pytest.importorskip("recall_kit_fusion")
    with registered_plugin(OverlapPlugin(), name="overlap-plugin"), registered_plugin(Plugins(), name="two"), \
            registered_plugin(recall_kit_fusion, name="fusion-for-ablate-test"):
        spec = SystemSpec("overlap+first+second", ["rrf"], {}, {})
        with pytest.raises(KeyboardInterrupt):
            run_ablation(spec, load_dataset(EXAMPLE), k=5, out=out, n_resamples=200, latency_sample=0)
    assert len(saved) == 4
    assert not out.exists() or os.listdir(out) == []


def test_ablate_takes_primary_relevance_level_and_judged_only(tiny_dataset):
    """--primary, -l and -J mean in ablate what they mean in compare and eval: every variant is
    scored at the level, judged-only, and the comparisons' decision family is the metric named."""
    from helpers import OverlapPlugin

    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.testing import registered_plugin

    recall_kit_fusion = pytest.importorskip("recall_kit_fusion")
    dataset = load_dataset(tiny_dataset)
    spec = SystemSpec("overlap+helpers:ReverseIdRetriever", ["rrf"], {}, {})
    with registered_plugin(OverlapPlugin(), name="overlap-plugin"), \
            registered_plugin(recall_kit_fusion, name="fusion-for-ablate-test"):
        ablation = run_ablation(spec, dataset, k=3, metrics=["recall@3", "mrr"], n_resamples=200,
                                latency_sample=0, primary=["mrr"], relevance_level=2, judged_only=True)
        fresh = run_benchmark(spec, dataset, k=3, metrics=["recall@3", "mrr"], latency_sample=0,
                              relevance_level=2, judged_only=True)
        default = run_ablation(spec, dataset, k=3, metrics=["recall@3", "mrr"], n_resamples=200,
                               latency_sample=0)
    assert ablation.comparison.primary == ["mrr"] and default.comparison.primary == ["recall@3"]
    assert all(v.result.relevance_level == 2 and v.result.judged_only for v in ablation.variants)
    assert ablation.variants[0].result.overall == fresh.overall
    # m1's only grade-2 memory is 1: at -l 2 fewer documents are relevant than by default.
    assert ablation.variants[0].result.overall != default.variants[0].result.overall
    assert "relevant: grade >= 2 (trec_eval -l)" in ablation.report().tables[0].notes


def test_ablate_cli_passes_primary_level_and_judged_only(tmp_path):
    out = tmp_path / "out"
    done = _cli(["ablate", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "-m", "recall@10,mrr",
                 "--primary", "mrr", "-l", "2", "-J", "--out-dir", str(out), "--resamples", "200",
                 "--latency-sample", "0", "--brief"], tmp_path)
    assert done.returncode == 0, done.stderr
    index = json.loads((out / "ablation.json").read_text())
    assert index["comparison"]["test"]["primary"] == ["mrr"]
    full = load_result(out / "fts5+bm25.json")
    assert full.relevance_level == 2 and full.judged_only is True
    assert "relevant: grade >= 2" in done.stdout


def test_ablation_verdict_names_a_win_that_costs_another_metric():
    import numpy as np
    from decide.test_compare import synthetic_result  # tests/ is on sys.path (conftest.py)

    from recall_kit.decide.ablate import Ablation, Variant
    from recall_kit.decide.compare import compare_results

    rng = np.random.default_rng(2)
    base = 0.3 + 0.4 * rng.random(60)
    full = synthetic_result("a+b", {"recall@5": list(base), "mrr": list(base)}, ["s"] * 60)
    # The single leg loses recall@5 on every query but gains mrr: the full system wins recall@5 at a cost.
    leg = synthetic_result("a", {"recall@5": list(base - 0.2), "mrr": list(base + 0.2)}, ["s"] * 60)
    comparison = compare_results([("a+b", full), ("a", leg)], n_resamples=1000, seed=0)
    ablation = Ablation("a+b", [Variant("a+b", "full", ["a", "b"], full), Variant("a", "single leg", ["a"], leg)],
                        comparison)
    notes = ablation.report(brief=True).tables[0].notes
    assert any(note.startswith("Verdict: a+b wins recall@5 against a (+0.2000) but loses significantly on mrr")
               for note in notes)


def test_ablation_builds_the_system_once_and_its_variants_from_it(tiny_dataset, monkeypatch):
    """The straight path: the full system is built once; each variant is made of its built legs and
    fusions (`System.subset`), the same system `build_system` makes from the variant's spec; the
    runner is handed built systems and their depths and builds nothing."""
    from helpers import OverlapPlugin

    from recall_kit.dataset import load_dataset
    from recall_kit.decide import ablate
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.measure.systems import system as system_module
    from recall_kit.testing import registered_plugin

    recall_kit_fusion = pytest.importorskip("recall_kit_fusion")
    dataset = load_dataset(tiny_dataset)
    spec = SystemSpec("overlap+helpers:ReverseIdRetriever", ["rrf"], {"overlap": 2.0}, {"rrf": {"k": "10"}})
    with registered_plugin(OverlapPlugin(), name="overlap-plugin"), \
            registered_plugin(recall_kit_fusion, name="fusion-for-ablate-test"):
        full = system_module.build_system(spec)
        for legs in (["helpers:ReverseIdRetriever"], ["overlap", "helpers:ReverseIdRetriever"]):
            part = full.subset(legs)
            assert SystemInfo.of(part) == SystemInfo.of(system_module.build_system(spec.subset(legs)))
            assert [leg.factory for leg in part.legs] == [leg.factory for leg in full.legs if leg.name in legs]
        with pytest.raises(Exception, match="not a leg"):
            full.subset(["bm25"])
        fresh = {legs: run_benchmark(spec.subset(legs.split("+")), dataset, k=3, metrics=["mrr"], latency_sample=0)
                 for legs in ("overlap+helpers:ReverseIdRetriever", "overlap")}
        built, build = [], system_module.build_system
        monkeypatch.setattr(ablate, "build_system", lambda s: built.append(s) or build(s))
        monkeypatch.setattr(system_module, "build_system", lambda s: pytest.fail("built again: " + s.retriever))
        ablation = ablate.run_ablation(spec, dataset, k=3, metrics=["mrr"], n_resamples=50, latency_sample=0)
    assert built == [spec]
    by_name = {variant.name: variant.result for variant in ablation.variants}
    for name, result in fresh.items():
        assert by_name[name].overall == result.overall and by_name[name].system == result.system


def _synthetic_ablation(deltas, spread=0.002):
    """An ablation of a+b+c whose variants score the full system's values plus `deltas[name]`."""
    import numpy as np
    from decide.test_compare import synthetic_result  # tests/ is on sys.path (conftest.py)

    from recall_kit.decide.ablate import Ablation, Variant
    from recall_kit.decide.compare import compare_results

    rng = np.random.default_rng(5)
    base = 0.3 + 0.4 * rng.random(80)
    legs = {"a+b+c": ["a", "b", "c"], "b+c": ["b", "c"], "a+c": ["a", "c"], "a+b": ["a", "b"], "a": ["a"]}
    noise = {name: rng.normal(0, spread, 80) for name in legs}
    results = [(name, synthetic_result(name, {"recall@5": list(base + deltas.get(name, 0.0) + noise[name])},
                                       ["s"] * 80)) for name in legs]
    comparison = compare_results(results, n_resamples=1000, seed=0)
    kinds = {"a+b+c": "full", "a": "single leg"}
    return Ablation("a+b+c", [Variant(name, kinds.get(name, "leave-one-out"), legs[name], result)
                              for name, result in results], comparison)


def test_the_ablation_leads_with_its_verdict():
    # make demo printed no verdict on the terminal (only the HTML had one).
    from recall_kit.reporting.formats import TableReporter

    wins = _synthetic_ablation({"a": 0.1, "b+c": -0.1})
    report = wins.report(brief=True)
    assert report.summary[0].startswith("Verdict on recall@5: a beats the full system a+b+c (")
    assert report.summary[1].startswith("Removing a leg costs, significantly: without a -0.099")
    assert TableReporter().render(report).startswith("Verdict on recall@5: a beats")
    noise = _synthetic_ablation({"a": 0.0005}, spread=0.05)
    assert noise.verdict()[0].startswith("Verdict on recall@5: no variant beats the full system a+b+c (")
    assert "is within the noise" in noise.verdict()[0]
    highest = _synthetic_ablation({name: -0.05 for name in ("a", "b+c", "a+c", "a+b")})
    assert highest.verdict()[0].startswith("Verdict on recall@5: the full system a+b+c (")


class _SecondWeakLeg:
    """ReverseIdRetriever registered as `reverse`: a second weak leg beside helpers:ReverseIdRetriever."""

    from recall_kit.plugin import hookimpl

    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        from helpers import ReverseIdRetriever

        register("reverse", ReverseIdRetriever)


def test_a_warning_every_variant_gives_is_said_once(tiny_dataset):
    # issue 70: make demo printed "Leg 'dense' alone scores ..." three times, once per hybrid.
    from helpers import OverlapPlugin

    from recall_kit.dataset import load_dataset
    from recall_kit.decide.ablate import run_ablation
    from recall_kit.testing import registered_plugin

    recall_kit_fusion = pytest.importorskip("recall_kit_fusion")
    spec = SystemSpec("overlap+reverse+helpers:ReverseIdRetriever", ["rrf"], {}, {})
    with registered_plugin(OverlapPlugin(), name="overlap-plugin"), \
            registered_plugin(_SecondWeakLeg(), name="reverse-plugin"), \
            registered_plugin(recall_kit_fusion, name="fusion-for-ablate-test"):
        ablation = run_ablation(spec, load_dataset(tiny_dataset), k=1, metrics=["recall@1"], n_resamples=200,
                                latency_sample=0)
    given = [(v.name, w) for v in ablation.variants for w in v.result.warnings]
    beaten = [name for name, warning in given if warning.startswith("Leg 'overlap' alone scores")]
    assert len(beaten) >= 2  # the case: one leg above several hybrids
    notes = ablation.report(brief=True).notes
    [said] = [note for note in notes if "Leg 'overlap' alone scores" in note]
    assert said.startswith("Leg 'overlap' alone scores recall@1 0.6250, above every fused system holding it (")
    assert all(f"{name} 0." in said for name in beaten)
    empty = [note for note in notes if "Leg 'overlap' returned no hits" in note]
    assert len(empty) == 1 and all(name in empty[0] for name, w in given if w.startswith("Leg 'overlap' returned"))
    assert len(notes) == len(set(notes))


def test_compare_on_an_ablations_files_leads_with_the_terminals_verdict(ablation, tmp_path):
    # issue 70: make demo's page (compare over the ablation's files) opened with per-variant
    # sentences; the terminal's one-line verdict was not on it.
    import html

    _, out, done = ablation
    index = json.loads((out / "ablation.json").read_text())
    files = [str(out / variant["file"]) for variant in index["variants"]]
    page = tmp_path / "ablation.html"
    compared = _cli(["compare", *files, "-m", "recall@10,ndcg@10", "--resamples", "2000", "--report", "html",
                     "--output", str(page)], tmp_path)
    assert compared.returncode == 0, compared.stderr
    verdict = done.stdout.splitlines()[0]
    assert verdict.startswith("Verdict on recall@10: ")
    first = page.read_text().split('<p class="summary">', 1)[1].split("</p>", 1)[0]
    assert html.unescape(first) == verdict
    # any other set of files is compared as before: no ablation verdict
    other = _cli(["compare", files[1], files[0], "-m", "recall@10"], tmp_path)
    assert other.returncode == 0 and not other.stdout.startswith("Verdict on")


def test_ablate_without_out_dir_prints_the_table_and_writes_nothing(tmp_path, monkeypatch):
    # issue 70: the study's ablation Reproduce line, run as printed, wrote ablation-check/ into the
    # study folder; without --out-dir, ablate now prints and writes nothing.
    from study_support import plugins

    from recall_kit.testing import invoke_cli

    monkeypatch.chdir(tmp_path)
    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion"):
        result = invoke_cli(["ablate", "-d", str(EXAMPLE), "-r", "fts5+bm25", "-f", "rrf", "-m", "recall@10",
                             "--resamples", "200", "--latency-sample", "0", "--brief"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Verdict on recall@10: ") and "Ablation of fts5+bm25" in result.stdout
    assert list(tmp_path.iterdir()) == []
