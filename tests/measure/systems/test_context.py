"""Context expansion at index time (recall_kit.measure.systems.context): neighbours in the same session or parent,
for any leg, with ids, scoring and qrels unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import OverlapRetriever
from typer.testing import CliRunner

from recall_kit import Corpus, Memory
from recall_kit.cli import app
from recall_kit.dataset import load_dataset
from recall_kit.decide.sweep import run_sweep
from recall_kit.errors import DatasetError, OptionError
from recall_kit.measure.run.runner import run_benchmark
from recall_kit.measure.systems.context import ContextOptions, expand_corpus, split_leg_options
from recall_kit.measure.systems.system import SystemSpec, build_system, parse_option_assignments


def memory(doc_id: str, content: str, session: int | None = None, scope: str | None = "s",
           **fields: object) -> Memory:
    extra = {"session": session} if session is not None else {}
    return Memory(id=doc_id, content=content, scope=scope, extra=extra, **fields)  # type: ignore[arg-type]


SESSIONS = Corpus([
    memory("a1", "A1", 1), memory("a2", "A2", 1), memory("a3", "A3", 1), memory("a4", "A4", 1),
    memory("b1", "B1", 2), memory("b2", "B2", 2),
    # Same session number in another scope: a different group.
    memory("c1", "C1", 1, scope="t"),
])


def contents(corpus: Corpus) -> dict[str, list[str]]:
    return {m.id: m.content.split("\n") for m in corpus}


def test_window_and_weight_by_session_nearest_first() -> None:
    expanded = contents(expand_corpus(SESSIONS, ContextOptions(window=2, weight=3), "bm25"))
    # Own text x3, then -1, +1, -2, +2 within the session; never across sessions or scopes.
    assert expanded["a2"] == ["A2", "A2", "A2", "A1", "A3", "A4"]
    assert expanded["a3"] == ["A3", "A3", "A3", "A2", "A4", "A1"]
    assert expanded["a1"] == ["A1", "A1", "A1", "A2", "A3"]
    assert expanded["b1"] == ["B1", "B1", "B1", "B2"]
    assert expanded["c1"] == ["C1", "C1", "C1"]


def test_ids_order_and_other_fields_are_kept() -> None:
    expanded = expand_corpus(SESSIONS, ContextOptions(window=1), "bm25")
    assert expanded.ids == SESSIONS.ids
    assert [m.scope for m in expanded] == [m.scope for m in SESSIONS]
    assert expanded.context == {"window": 1, "weight": 1, "by": "auto", "order": "corpus", "date": False}
    # The fingerprint (what on-disk caches key on) changes with the expansion, and per-scope
    # subsets keep it.
    assert expanded.fingerprint != SESSIONS.fingerprint
    assert expanded.subset(lambda m: m.scope == "s").context == expanded.context


def test_no_expansion_returns_the_corpus_itself() -> None:
    assert expand_corpus(SESSIONS, None, "bm25") is SESSIONS
    assert expand_corpus(SESSIONS, ContextOptions(), "bm25") is SESSIONS


def test_parent_grouping_and_created_at_order() -> None:
    corpus = Corpus([
        memory("x2", "X2", parent_id="doc", created_at="2024-01-02"),
        memory("y1", "Y1", parent_id="other", created_at="2024-01-01"),
        memory("x1", "X1", parent_id="doc", created_at="2024-01-01"),
    ])
    by_file = contents(expand_corpus(corpus, ContextOptions(window=1), "dense"))
    assert by_file["x2"] == ["X2", "X1"] and by_file["y1"] == ["Y1"]
    by_scope = contents(expand_corpus(corpus, ContextOptions(window=1, by="scope", order="created_at"), "dense"))
    # created_at order over the whole scope: y1 (01-01), x1 (01-01, later in the file), x2.
    assert by_scope["x1"] == ["X1", "Y1", "X2"]


def test_date_puts_the_session_date_in_words() -> None:
    corpus = Corpus([memory("a", "A", 1, created_at="2023-05-08T13:56:00")])
    assert contents(expand_corpus(corpus, ContextOptions(date=True), "bm25"))["a"] == ["A", "8 May 2023"]


def test_nothing_to_group_by_is_one_clear_error() -> None:
    flat = Corpus([memory("a", "A"), memory("b", "B")])
    with pytest.raises(DatasetError, match=r"no memory carries a \"session\" or \"parent_id\".*bm25.context.by=scope"):
        expand_corpus(flat, ContextOptions(window=1), "bm25")
    with pytest.raises(DatasetError, match="created_at"):
        expand_corpus(flat, ContextOptions(window=1, by="scope", order="created_at"), "bm25")
    with pytest.raises(DatasetError, match="by=parent"):
        expand_corpus(SESSIONS, ContextOptions(window=1, by="parent"), "bm25")


def test_option_syntax_command_line_and_toml() -> None:
    parsed = parse_option_assignments(["bm25.context.window=2", "bm25.k1=1.2", "rrf.k=10"])
    assert parsed == {"bm25": {"context.window": "2", "k1": "1.2"}, "rrf": {"k": "10"}}
    plugin, context = split_leg_options("bm25", {"context": {"window": 2, "weight": 3}, "k1": 1.2})
    assert plugin == {"k1": 1.2} and context == ContextOptions(window=2, weight=3)
    with pytest.raises(OptionError, match="Unknown option 'windw'"):
        split_leg_options("bm25", {"context.windw": 2})
    with pytest.raises(OptionError, match="weight must be >= 1"):
        split_leg_options("bm25", {"context.weight": 0})


def test_a_third_party_leg_gets_the_expanded_corpus(conversations: Path, overlap_plugin) -> None:
    dataset = load_dataset(conversations)
    plain = run_benchmark("overlap", dataset, k=5, metrics=["recall@1"])
    spec = SystemSpec("overlap", options={"overlap": {"context.window": "1", "context.weight": "2"}})
    system = build_system(spec)
    expanded = run_benchmark(system, dataset, k=5, metrics=["recall@1"])
    # Ids and qrels untouched; the short reply "Yes, loved it!" now carries its topic: the
    # pottery question's answer shares ann, the, pottery, class (4 words; the question turn 3).
    assert set(expanded.query_ids) == set(plain.query_ids)
    assert plain.per_query("recall@1")["conv-a:q1"] == 0.0
    assert expanded.per_query("recall@1")["conv-a:q1"] == 1.0
    assert expanded.queries[0].ranking[0] == "conv-a:D1:2"
    leg = expanded.system.legs[0]
    assert leg.context == {"window": 1, "weight": 2, "by": "auto", "order": "corpus", "date": False}
    assert expanded.manifest.context == {"overlap": leg.context}
    assert plain.system.legs[0].context is None


def test_overlap_retriever_indexes_the_expanded_text(conversations: Path) -> None:
    dataset = load_dataset(conversations)
    corpus = expand_corpus(dataset.corpus, ContextOptions(window=1), "overlap")
    retriever = OverlapRetriever()
    retriever.build_index(corpus.subset(lambda m: m.scope == "conv-a"))
    # "Yes, loved it!" (D1:2) is found by the topic word of the turn before it.
    assert "conv-a:D1:2" in [hit.id for hit in retriever.search("pottery", 5)]


def test_cli_flat_dataset_error_is_one_line(tiny_dataset: Path, overlap_plugin) -> None:
    result = CliRunner().invoke(app, ["eval", "-d", str(tiny_dataset), "-r", "overlap",
                                      "-o", "overlap.context.window=1"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "needs neighbours" in result.output


def test_context_on_a_fusion_is_rejected(overlap_plugin) -> None:
    with pytest.raises(OptionError, match="belong to legs"):
        build_system(SystemSpec("overlap", fusions=["rrf"], options={"rrf": {"context.window": 1}}))


def test_sweep_grids_over_the_window(conversations: Path, overlap_plugin, tmp_path: Path) -> None:
    dataset = load_dataset(conversations)
    sweep = run_sweep(SystemSpec("overlap"), dataset, ["overlap.context.window=0,1"], "mrr",
                      k=20, n_resamples=200, out=tmp_path / "sweep")
    # The default and window=0 share one search; window=1 is a second one.
    assert sweep.leg_searches == 2
    scores = {p.settings["overlap.context.window"]: p.tuning_score for p in sweep.points}
    alone = run_benchmark(build_system(SystemSpec("overlap", options={"overlap": {"context.window": "1"}})),
                          dataset, k=20, metrics=["mrr"])
    # (k = 20 covers each scope's whole corpus: the overlap retriever's ties then cut nowhere.)
    assert scores["1"] == pytest.approx(alone.mean("mrr"))
    assert scores["0"] == pytest.approx(sweep.default.tuning_score)
    assert scores["1"] != scores["0"]
    saved = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert saved["points"][1]["spec"]["options"] == {"overlap": {"context.window": "1"}}


def test_the_fingerprint_names_the_expansion_even_for_equal_text() -> None:
    """On-disk caches key on the corpus fingerprint (the dense embedding cache does): a corpus
    whose text happens to be unchanged by an expansion (no neighbours) still gets its own key."""
    memories = [memory("a", "A", 1)]
    plain = Corpus(memories)
    expanded = expand_corpus(plain, ContextOptions(window=1), "dense")
    assert [m.content for m in expanded] == ["A"]
    assert expanded.fingerprint != plain.fingerprint
    assert expand_corpus(plain, ContextOptions(window=2), "dense").fingerprint != expanded.fingerprint
