"""The ONNX Runtime path: exported once from the bundled model's weights into the cache (whole, and
checked against torch), then memories and queries embedded with no torch; the same rankings as
torch's; a model it cannot reproduce stays on torch and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import recall_kit_dense
from recall_kit_dense import onnx_backend, onnx_export
from recall_kit_dense.onnx_export import MANIFEST, MODEL_FILE, TOLERANCE
from recall_kit_dense.retriever import DenseRetriever, resolve_model

from recall_kit import load_dataset, load_result
from recall_kit.plugin import Corpus, Memory
from recall_kit.testing import check_top_k_of, invoke_cli, registered_plugin

Options = DenseRetriever.Options
ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("torch", "transformers", "sentence_transformers")

MEMORIES = [
    Memory("1", "The cat sleeps on the warm windowsill every afternoon."),
    Memory("2", "Quarterly revenue grew eight percent, driven by subscription sales."),
    Memory("3", "My sister's wedding is in Lisbon next June."),
    Memory("4", "Bake the sourdough at 230 degrees for forty minutes."),
    Memory("5", "The flight to Tokyo leaves from gate 42 at 7am."),
]
QUERIES = ["when is my sister getting married", "bread recipe oven temperature", "pet naps", "company earnings"]


def built(folder: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> DenseRetriever:
    monkeypatch.setenv("RECALL_KIT_CACHE", str(folder))
    retriever = DenseRetriever(Options(**options))  # type: ignore[arg-type]
    retriever.build_index(Corpus(MEMORIES))
    return retriever


@pytest.mark.slow
def test_the_export_is_made_once_whole_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh cache: the export is written beside its place and moved in whole, its manifest last
    (each file's size and sha256, the probe texts' largest difference from torch); a second
    retriever reuses it, and its memory and query embeddings are torch's."""
    monkeypatch.setattr(onnx_export, "_SEEN", {})  # no export this process saw before: a new one
    onnx_side = built(tmp_path, monkeypatch, backend="onnx", cache=False)
    torch_side = built(tmp_path, monkeypatch, backend="torch", cache=False)
    (folder,) = (tmp_path / "dense" / "onnx").iterdir()
    rewrite = f"model.ort-{onnxruntime.__version__}.onnx"  # the runtime's rewrite, made by the export's check
    assert sorted(path.name for path in folder.iterdir()) == sorted([MANIFEST, MODEL_FILE, rewrite, "tokenizer.json"])
    assert not [path for path in folder.parent.iterdir() if path.name.startswith(".")]  # nothing partial
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["files"][MODEL_FILE]["size"] == (folder / MODEL_FILE).stat().st_size
    assert 0 <= manifest["probe_max_abs_difference"] <= TOLERANCE
    assert (manifest["pooling"], manifest["dimension"], manifest["max_seq_length"]) == ("mean", 384, 256)
    assert onnx_side.index_stats()["backend"] == "onnx" and torch_side.index_stats()["backend"] == "torch"
    assert onnx_side.embeddings is not None and torch_side.embeddings is not None
    np.testing.assert_allclose(onnx_side.embeddings, torch_side.embeddings, atol=1e-5)
    np.testing.assert_allclose(onnx_side._embed_queries(QUERIES), torch_side._embed_queries(QUERIES), atol=1e-5)
    modified = (folder / MODEL_FILE).stat().st_mtime_ns
    elsewhere = built(tmp_path / "elsewhere", monkeypatch, backend="onnx")  # another cache: a copy (links)
    (copied,) = (tmp_path / "elsewhere" / "dense" / "onnx").iterdir()
    assert copied.name == folder.name and (copied / MODEL_FILE).read_bytes() == (folder / MODEL_FILE).read_bytes()
    assert (copied / rewrite).stat().st_ino == (folder / rewrite).stat().st_ino  # the runtime's rewrite linked, not made again
    sessions = {id(session) for session in onnx_side._model().model._sessions.values()}  # type: ignore[union-attr]
    assert {id(session) for session in elsewhere._model().model._sessions.values()} <= sessions  # type: ignore[union-attr]
    assert elsewhere.embeddings is not None
    np.testing.assert_array_equal(elsewhere.embeddings, onnx_side.embeddings)
    built(tmp_path, monkeypatch, backend="onnx", max_seq_length=128)
    assert (folder / MODEL_FILE).stat().st_mtime_ns == modified  # reused, not exported again


def test_a_damaged_export_is_not_used_but_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     with_exports: Callable[[Path], Path]) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(with_exports(tmp_path / "seed") / "dense", cache / "dense")  # a copy, not links
    (folder,) = (cache / "dense" / "onnx").iterdir()
    model = folder / MODEL_FILE
    model.write_bytes(model.read_bytes()[:-1000])  # a cut file: its size is not the manifest's
    retriever = built(cache, monkeypatch, backend="onnx")
    assert retriever.index_stats()["backend"] == "onnx"
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert model.stat().st_size == manifest["files"][MODEL_FILE]["size"]
    assert retriever.search(QUERIES[0], 1)[0].id == "3"


def test_an_export_another_process_moved_in_while_this_one_copied_is_kept(tmp_path: Path,
                                                                         with_exports: Callable[[Path], Path]) -> None:
    """Before: a process that found no export, made its own and meanwhile saw another process move
    a complete one in, removed that one to move its own in; the other, already reading it, failed
    ("model.onnx: No such file or directory": a fresh clone's CI, the example study beside the docs
    pages' export). Now the one moved in first is kept and the second process's copy dropped."""
    (seen,) = (with_exports(tmp_path / "seed") / "dense" / "onnx").iterdir()
    signature = json.loads((seen / MANIFEST).read_text(encoding="utf-8"))["weights"]
    folder = tmp_path / "cache" / "dense" / "onnx" / seen.name

    def fill_while_another_moves_in(work: Path) -> dict[str, object] | None:
        shutil.copytree(seen, folder, copy_function=os.link)  # the other process, done first
        (folder / "theirs").write_text("")
        return onnx_export._copy(seen, work, signature)

    manifest = onnx_export._into_place(folder, signature, "MiniLM", fill_while_another_moves_in)
    assert manifest == onnx_export.read_manifest(folder, signature)
    assert (folder / "theirs").exists()  # theirs is kept
    assert [path.name for path in folder.parent.iterdir()] == [seen.name]  # no work folder left


def test_sessions_sleep_rather_than_spin_and_embed_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       with_exports: Callable[[Path], Path]) -> None:
    """The sessions' threads sleep between runs (ONNX Runtime's `allow_spinning` off: on a shared
    machine spinning took CPU from the work beside it), and the embeddings are a spinning
    session's, bit for bit."""
    cache = with_exports(tmp_path / "seed")
    monkeypatch.setattr(onnx_backend, "_LOADED", {})
    retriever = built(cache, monkeypatch, backend="onnx", cache=False)
    model = retriever._model().model
    (session,) = model._sessions.values()
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = onnxruntime.SessionOptions()
    spinning.intra_op_num_threads = model.threads
    spinning.inter_op_num_threads = 1
    other = onnx_backend._inference_session(onnxruntime, model.model_path(), spinning)
    feed = model._feed([memory.content for memory in MEMORIES])
    inputs = {name: feed[name] for name in model._inputs}
    np.testing.assert_array_equal(session.run(None, inputs)[0], other.run(None, inputs)[0])


def test_runs_embed_at_most_run_batch_texts_and_agree_with_one_run_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_exports: Callable[[Path], Path]) -> None:
    """Whatever batch size is asked, one ONNX Runtime run embeds at most `RUN_BATCH` texts (a
    smaller batch size is kept), longest first; each text's vector is the one it gets alone, to
    float32's last bits (padding is per run), memories and token vectors alike."""
    cache = with_exports(tmp_path / "seed")
    monkeypatch.setattr(onnx_backend, "_LOADED", {})
    model = built(cache, monkeypatch, backend="onnx", cache=False)._model().model
    texts = [f"{memory.content} " * (1 + index % 4) for index, memory in enumerate(MEMORIES * 4)]
    rows: list[int] = []

    class Recording:
        def __init__(self, session: object) -> None:
            self.session = session

        def run(self, names: object, feed: dict[str, np.ndarray]) -> object:
            rows.append(len(feed["input_ids"]))
            return self.session.run(names, feed)  # type: ignore[attr-defined]

    model._sessions = {key: Recording(value) for key, value in model._sessions.items()}
    together = model.encode(texts, "", 64)
    assert rows == [onnx_backend.RUN_BATCH, onnx_backend.RUN_BATCH, len(texts) - 2 * onnx_backend.RUN_BATCH]
    rows.clear()
    model.encode(texts, "", 3)
    assert max(rows) == 3
    alone = np.stack([model.encode([text], "", 64)[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)
    rows.clear()
    tokens = model.token_vectors(texts, 64)
    assert max(rows) == onnx_backend.RUN_BATCH and [len(found) for _, found in tokens] == [
        len(found) for _, found in (model.token_vectors([text])[0] for text in texts)]


def test_the_runtime_rewrite_is_saved_once_and_embeds_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           with_exports: Callable[[Path], Path]) -> None:
    """The export's graph as ONNX Runtime rewrites it (fused) is saved once beside it, named by the
    runtime's version (another version's is removed), and read by later sessions: the memories'
    and the queries' embeddings are a session of the export's own, bit for bit. Where the rewrite
    cannot be written, the export serves as it is."""
    cache = tmp_path / "cache"
    shutil.copytree(with_exports(tmp_path / "seed") / "dense", cache / "dense")  # a copy, not links
    (folder,) = (cache / "dense" / "onnx").iterdir()
    for saved in folder.glob("model.ort-*.onnx"):
        saved.unlink()
    (folder / "model.ort-0.0.1.onnx").write_bytes(b"another runtime's rewrite")
    rewrite = folder / f"model.ort-{onnxruntime.__version__}.onnx"
    rewriting = onnx_backend._rewritten

    def embedded(**patched: object) -> tuple[np.ndarray, np.ndarray]:
        monkeypatch.setattr(onnx_backend, "_LOADED", {})  # a new process: new sessions
        monkeypatch.setattr(onnx_backend, "_SHARED", weakref.WeakValueDictionary())
        for name, value in patched.items():
            monkeypatch.setattr(onnx_backend, name, value)
        retriever = built(cache, monkeypatch, backend="onnx", cache=False)
        assert retriever.index_stats()["backend"] == "onnx" and retriever.embeddings is not None
        return retriever.embeddings.copy(), np.stack([retriever._embed_queries([query])[0] for query in QUERIES])

    first = embedded()
    assert [path.name for path in folder.glob("model.ort-*.onnx")] == [rewrite.name]
    made = rewrite.stat().st_mtime_ns
    again = embedded()
    assert rewrite.stat().st_mtime_ns == made  # read, not made again
    plain = embedded(_rewritten=lambda runtime, path: None)  # sessions of the export itself
    for vectors in (again, plain):
        np.testing.assert_array_equal(vectors[0], first[0])
        np.testing.assert_array_equal(vectors[1], first[1])
    rewrite.unlink()
    rewrite.mkdir()  # where the rewrite cannot be written
    unwritten = embedded(_rewritten=rewriting)
    np.testing.assert_array_equal(unwritten[1], first[1])
    assert rewrite.is_dir() and not [path for path in folder.iterdir() if path.name.startswith(".")]


def test_a_model_the_onnx_path_cannot_reproduce_says_so_and_uses_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The bundled model with max pooling (which the ONNX path does not do): one line on stderr,
    and the embeddings are torch's."""
    folder = tmp_path / "max-pooled"
    shutil.copytree(resolve_model(Options().model).folder, folder, copy_function=os.symlink)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text(encoding="utf-8"))
    pooling.unlink()
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}))
    retriever = built(tmp_path / "cache", monkeypatch, model=str(folder), backend="onnx")
    message = capsys.readouterr().err
    assert "uses max pooling" in message and "using torch" in message and len(message.strip().splitlines()) == 1
    assert retriever.index_stats()["backend"] == "torch"
    assert not list((tmp_path / "cache" / "dense" / "onnx").glob("*/" + MANIFEST))


def test_same_rankings_as_torch_on_the_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               with_exports: Callable[[Path], Path]) -> None:
    """`recall-kit eval -r dense` (ONNX Runtime, the default on a CPU) and the same command with
    -o dense.backend=torch rank every query's top 10 alike. Where the two differ, it is a near-tie
    (two memories whose scores are within float32 noise, 1e-5 relative, swapped): each backend's
    top 10 is a top 10 of the other's ranking, score for score (recall_kit.testing.check_top_k_of)."""
    monkeypatch.setenv("RECALL_KIT_CACHE", str(with_exports(tmp_path / "cache")))
    dataset = load_dataset(ROOT / "examples" / "memories")
    results = {}
    with registered_plugin(recall_kit_dense):
        for backend in ("auto", "torch"):
            out = tmp_path / f"{backend}.json"
            done = invoke_cli(["eval", "--dataset", str(ROOT / "examples" / "memories"), "-r", "dense", "-k", "10",
                               "-o", f"dense.backend={backend}", "--latency-sample", "0", "--json", str(out)])
            assert done.exit_code == 0, done.output
            results[backend] = load_result(out)
    assert results["auto"].index.legs["dense"].stats["backend"] == "onnx"
    rankings = {backend: {q.query_id: q.ranking for q in result.queries} for backend, result in results.items()}
    differing = [query for query in dataset.queries if rankings["auto"][query.query_id] != rankings["torch"][query.query_id]]
    assert len(rankings["auto"]) == 120 and len(differing) <= 2
    backends = {}
    for backend in ("onnx", "torch"):
        backends[backend] = DenseRetriever(Options(backend=backend))  # type: ignore[arg-type]
        backends[backend].build_index(dataset.corpus)
    texts = [query.text for query in dataset.queries]
    onnx_hits, torch_hits = (backends[name].search_many(texts, 20) for name in ("onnx", "torch"))
    for query, onnx_ranking, torch_ranking in zip(dataset.queries, onnx_hits, torch_hits, strict=True):
        assert [hit.id for hit in onnx_ranking[:10]] == rankings["auto"][query.query_id]
        assert [hit.id for hit in torch_ranking[:10]] == rankings["torch"][query.query_id]
        check_top_k_of(onnx_ranking[:10], torch_ranking, 10, rel_tol=1e-5, what=query.query_id)
        check_top_k_of(torch_ranking[:10], onnx_ranking, 10, rel_tol=1e-5, what=query.query_id)


@pytest.mark.slow
def test_the_command_on_a_warm_cache_imports_no_torch(tmp_path: Path, with_exports: Callable[[Path], Path]) -> None:
    """Once exported, `recall-kit eval -r dense` embeds memories and queries with neither torch,
    transformers nor sentence-transformers imported."""
    code = (
        "import sys\n"
        "sys.argv = ['recall-kit', 'eval', '--dataset', 'examples/memories', '-r', 'dense', '--no-progress']\n"
        "from recall_kit.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-dense",
           "RECALL_KIT_CACHE": str(with_exports(tmp_path / "cache"))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout and "recall@10" in done.stdout


@pytest.mark.slow
def test_int8_quantised_query_model_is_a_second_file_and_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_exports: Callable[[Path], Path],
) -> None:
    cache = with_exports(tmp_path / "cache")
    full = built(cache, monkeypatch, backend="onnx")
    quantised = built(cache, monkeypatch, backend="onnx", quantize=True, threads=2)
    cosines = (quantised._embed_queries(QUERIES) * full._embed_queries(QUERIES)).sum(axis=1)
    assert (cosines > 0.9).all() and (cosines < 1 - 1e-6).any()  # close, and really quantised
    assert quantised.embeddings is not None and full.embeddings is not None
    np.testing.assert_array_equal(quantised.embeddings, full.embeddings)  # memories stay fp32
    assert quantised.search(QUERIES[0], 1)[0].id == "3"
    assert len(list((cache / "dense" / "onnx").glob("*/*-int8.onnx"))) == 1


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="threads"):
        Options(threads=0)
    with pytest.raises(ValueError, match="quantize needs backend=onnx"):
        Options(quantize=True)
    with pytest.raises(ValueError, match="backend=onnx runs on the CPU"):
        Options(backend="onnx", device="cuda")
