"""Executors: a sweep and an ablation on a real local Ray cluster give the local run's results,
a task that raises is reported with its setting while the others are kept, an interrupted run
resumes with only what is missing, and a missing `ray` names the extra."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recall_kit import hookimpl
from recall_kit.dataset import load_dataset
from recall_kit.decide.ablate import run_ablation
from recall_kit.decide.sweep import run_sweep
from recall_kit.errors import PluginRunError
from recall_kit.measure.run.executor import (
    ExtraMissingError,
    LocalExecutor,
    RayExecutor,
    TaskFailedError,
    checkpoint_for,
    make_executor,
)
from recall_kit.measure.systems.system import SystemSpec
from recall_kit.types import Corpus, Hit, Retriever

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "memories"
#: The embedding cache folder of the test cluster's workers.
WORKER_CACHE = Path(tempfile.gettempdir()) / f"recall-kit-ray-test-cache-{os.getpid()}"

#: Result keys that hold timings (or the time of the run): the only ones allowed to differ.
#: How far a float32 embedding (or a cosine score) computed on two code paths or machines may
#: differ: a few ulps of values below 1 (docs/scale.md, "What identical means").
EMBEDDING_TOLERANCE = 1e-6

TIMINGS = {"latency", "latency_ms", "wall_seconds", "time", "build_seconds", "embed_seconds", "search_seconds",
           "fusion_seconds", "queries_per_second"}


def _without_timings(value: Any, keys: frozenset[str] | set[str] = TIMINGS) -> Any:
    if isinstance(value, dict):
        return {key: _without_timings(item, keys) for key, item in value.items() if key not in keys}
    if isinstance(value, list):
        return [_without_timings(item, keys) for item in value]
    return value


def _found(value: Any, key: str) -> list[Any]:
    """Every value of `key` anywhere in a result's dictionary."""
    if isinstance(value, dict):
        return [item for name, inner in value.items() for item in ([inner] if name == key else []) + _found(inner, key)]
    if isinstance(value, list):
        return [item for inner in value for item in _found(inner, key)]
    return []


def _folder(folder: Path) -> dict[str, Any]:
    """Every JSON file of an output folder, timings removed; its checkpoint must be gone."""
    assert not checkpoint_for(folder).folder.exists()  # type: ignore[union-attr]
    return {path.name: _without_timings(json.loads(path.read_text())) for path in sorted(folder.glob("*.json"))}


@dataclass
class FlakyOptions:
    #: A file to append `salt` to at every index build (which builds ran).
    log: str = ""
    #: While this file exists, the build of salt 2 raises `error`.
    gate: str = ""
    error: str = "ValueError"
    salt: int = 0


class Flaky(Retriever):
    """Ranks memories by how many query words they share (ties by id); its options change
    nothing in the ranking, so every salt is the same leg with a different setting."""

    name = "flaky"
    Options = FlakyOptions

    def build_index(self, corpus: Corpus) -> None:
        options = self.options
        if options.log:
            with open(options.log, "a") as log:
                log.write(f"{options.salt}\n")
        if options.salt == 2 and options.gate and Path(options.gate).exists():
            raise {"ValueError": ValueError, "KeyboardInterrupt": KeyboardInterrupt}[options.error]("gate")
        self.words = {memory.id: set(memory.content.lower().split()) for memory in corpus}

    def search(self, query: str, k: int) -> list[Hit]:
        words = set(query.lower().split())
        scored = sorted(((len(words & text), memory) for memory, text in self.words.items()),
                        key=lambda pair: (-pair[0], pair[1]))
        return [Hit(memory, float(score)) for score, memory in scored[:k] if score > 0]


class FlakyPlugin:
    @hookimpl
    def register_retrievers(self, register: Any) -> None:
        register("flaky", Flaky)


@pytest.fixture(scope="session")
def ray_cluster():
    """One real local Ray cluster for the whole session: 2 CPUs, no GPU, no dashboard."""
    ray = pytest.importorskip("ray")
    # The test retriever lives in this module, which Ray's workers cannot import: send it by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # The workers' cache folder (they inherit the environment at the start): a test that needs
    # the driver to read the same one sets RECALL_KIT_CACHE to WORKER_CACHE.
    saved = os.environ.get("RECALL_KIT_CACHE")
    os.environ["RECALL_KIT_CACHE"] = str(WORKER_CACHE)
    try:
        ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, configure_logging=False)
    finally:
        if saved is None:
            os.environ.pop("RECALL_KIT_CACHE", None)
        else:
            os.environ["RECALL_KIT_CACHE"] = saved
    yield ray
    shutil.rmtree(WORKER_CACHE, ignore_errors=True)
    ray.shutdown()


@pytest.fixture
def flaky(recall_kit_plugin, monkeypatch, tmp_path):
    """bm25, fts5, rrf and the flaky leg registered; checkpoints in this test's own cache folder."""
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "cache"))
    for module in ("recall_kit_bm25", "recall_kit_fts5", "recall_kit_fusion"):
        recall_kit_plugin(pytest.importorskip(module), name=f"{module}-for-executor-test")
    recall_kit_plugin(FlakyPlugin(), name="flaky-test")


def _kept(out: Path) -> int:
    checkpoint = checkpoint_for(out)
    assert checkpoint is not None
    return len(list(checkpoint.folder.glob("*.json")))


def _sweep(tmp_path: Path, name: str, executor: Any, **options: str) -> Any:
    spec = SystemSpec("bm25+flaky", ["rrf"], {}, {"flaky": dict(options)} if options else {})
    return run_sweep(spec, load_dataset(EXAMPLE), ["flaky.salt=0,1,2", "rrf.k=10,60"], "ndcg@10",
                     k=10, metrics=["recall@10", "ndcg@10"], holdout=0.5, out=tmp_path / name,
                     n_resamples=200, latency_sample=5, show_progress=False, executor=executor)


def test_sweep_and_ablation_on_ray_equal_the_local_run(ray_cluster, flaky, tmp_path):
    local = _sweep(tmp_path, "local", None)
    remote = _sweep(tmp_path, "ray", RayExecutor())
    assert remote.leg_searches == local.leg_searches == 4  # bm25 once, flaky once per salt
    assert [p.settings for p in remote.points] == [p.settings for p in local.points]
    assert _folder(tmp_path / "ray") == _folder(tmp_path / "local")
    assert len(_folder(tmp_path / "local")) == 1 + 6 + 1  # the default, six settings, sweep.json

    spec = SystemSpec("fts5+bm25+flaky", ["rrf"])
    for name, executor in (("ablate-local", LocalExecutor()), ("ablate-ray", RayExecutor())):
        run_ablation(spec, load_dataset(EXAMPLE), k=10, metrics=["recall@10", "mrr"], out=tmp_path / name,
                     n_resamples=200, latency_sample=5, show_progress=False, executor=executor)
    assert _folder(tmp_path / "ablate-ray") == _folder(tmp_path / "ablate-local")
    assert len(_folder(tmp_path / "ablate-ray")) == 7 + 1  # full, 3 leave-one-out, 3 single legs


def test_several_systems_on_ray_equal_each_evaluated_alone(ray_cluster, flaky, tmp_path):
    from recall_kit.measure.run.distribute import run_systems
    from recall_kit.measure.run.runner import run_benchmark
    from recall_kit.measure.systems.system import build_system

    dataset = load_dataset(EXAMPLE)
    specs = {"hybrid": SystemSpec("bm25+flaky", ["rrf"]), "hybrid-k10": SystemSpec("bm25+fts5", ["rrf"], {}, {"rrf": {"k": "10"}}),
             "fts5": SystemSpec("fts5")}
    options = {"k": 10, "metrics": ["recall@10", "ndcg@20"], "latency_sample": 5, "show_progress": False}
    run_systems([(name, build_system(spec)) for name, spec in specs.items()], dataset, executor=RayExecutor(),
                out=tmp_path / "out", **options)  # type: ignore[arg-type]
    written = _folder(tmp_path / "out")
    assert sorted(written) == ["fts5.json", "hybrid-k10.json", "hybrid.json"]
    for name, spec in specs.items():
        alone = run_benchmark(spec, dataset, **options)  # type: ignore[arg-type]
        assert written[f"{name}.json"] == _without_timings(alone.to_dict())


def _small_dataset(folder: Path, memories: int) -> Path:
    """The example set cut to its first `memories` memories and the queries they fully answer."""
    folder.mkdir()
    corpus = (EXAMPLE / "corpus.jsonl").read_text().splitlines()[:memories]
    kept = {json.loads(line)["id"] for line in corpus}
    qrels = [line for line in (EXAMPLE / "qrels.jsonl").read_text().splitlines()
             if {int(i) for i in json.loads(line).get("relevant_ids") or json.loads(line)["relevance"]} <= kept]
    answered = {json.loads(line)["query_id"] for line in qrels}
    queries = [line for line in (EXAMPLE / "queries.jsonl").read_text().splitlines()
               if json.loads(line)["query_id"] in answered]
    for name, lines in (("corpus", corpus), ("qrels", qrels), ("queries", queries)):
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_a_dense_leg_embeds_in_batch_tasks_and_equals_the_local_run(ray_cluster, recall_kit_plugin, monkeypatch,
                                                                     tmp_path):
    """The dense leg's corpus is embedded as batch tasks, the cache written once from the driver, and
    the leg's search task reads it: the same rankings as a local run, and the same embeddings and
    scores within EMBEDDING_TOLERANCE (docs/scale.md, "What identical means")."""
    pytest.importorskip("recall_kit_dense")
    import numpy as np
    import recall_kit_dense
    from recall_kit_dense.cache import EmbeddingCache
    from recall_kit_dense.retriever import DenseRetriever

    from recall_kit.measure.run.distribute import run_systems
    from recall_kit.measure.systems.system import build_system

    recall_kit_plugin(recall_kit_dense, name="dense-for-executor-test")
    dataset = load_dataset(_small_dataset(tmp_path / "data", 24))
    # On torch, whose thread count the driver sets below (ONNX Runtime's is the process's CPUs, in
    # the plan and in the batch tasks alike).
    spec = SystemSpec("dense", [], {}, {"dense": {"batch_size": "2", "backend": "torch"}})  # 8 texts an encode call
    options = {"k": 10, "metrics": ["recall@10", "ndcg@10"], "latency_sample": 3, "show_progress": False}
    batches = DenseRetriever(DenseRetriever.Options(batch_size=2, cache=True, backend="torch"))
    monkeypatch.setenv("RECALL_KIT_CACHE", str(tmp_path / "local-cache"))
    assert [len(texts) for _, texts in batches.embedding_work(dataset.corpus)] == [8, 8, 8]

    # Both runs compute alike: the same encode calls (8 texts, batches of 2, longest first) on one
    # thread. A Ray task has one thread (torch's and BLAS's) for the search; the embedding batches
    # run on the thread count of the driver that planned them, so the remote run is planned on
    # one thread too. (Issue 37: the local run had one thread, the batches the driver's default,
    # two, and on an Intel Xeon MKL sums a matrix product's terms on two threads in another order.)
    import torch
    from threadpoolctl import threadpool_limits

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            local = run_systems([("dense", build_system(spec))], dataset, **options)[0]  # type: ignore[arg-type]
            local_cache = EmbeddingCache(tmp_path / "local-cache" / "dense")
            key = batches.cache_key(dataset.corpus)
            assert batches.embedding_work(dataset.corpus) == []  # the local run wrote its cache: nothing missing
            monkeypatch.setenv("RECALL_KIT_CACHE", str(WORKER_CACHE))  # the driver's cache is the workers'
            assert {threads for threads, _ in batches.embedding_work(dataset.corpus)} == {1}
            remote = run_systems([("dense", build_system(spec))], dataset, executor=RayExecutor(), **options)[0]  # type: ignore[arg-type]
    finally:
        torch.set_num_threads(saved)
    written = EmbeddingCache(WORKER_CACHE / "dense").load(key)
    expected = local_cache.load(key)
    assert written.hit and expected.hit and written.array is not None and expected.array is not None
    # Not bit for bit: two processes on one machine usually agree to the bit, but a BLAS library
    # (MKL on Intel) may choose its kernel by memory alignment too; never more than a few ulps.
    np.testing.assert_allclose(written.array, expected.array, rtol=0, atol=EMBEDDING_TOLERANCE)
    assert written.extra == expected.extra
    # The search task read the embeddings the batch tasks made; a local build embedded them itself.
    remote_dict, local_dict = remote.to_dict(), local.to_dict()
    assert _found(remote_dict, "cache_hit") == [True] and _found(remote_dict, "embedded_memories") == [0]
    assert _found(local_dict, "cache_hit") == [False] and _found(local_dict, "embedded_memories") == [24]
    assert remote.rankings() == local.rankings()  # the same ids in the same order, every query
    for remote_query, local_query in zip(remote.queries, local.queries, strict=True):
        np.testing.assert_allclose(remote_query.scores, local_query.scores, rtol=0, atol=EMBEDDING_TOLERANCE)
    ignored = TIMINGS | {"cache", "cache_hit", "embedded_memories", "scores"}
    assert _without_timings(remote_dict, ignored) == _without_timings(local_dict, ignored)


def test_a_failing_task_is_reported_the_rest_kept_and_a_rerun_finishes_it(ray_cluster, flaky, tmp_path):
    log, gate = tmp_path / "builds.log", tmp_path / "gate"
    gate.touch()
    with pytest.raises(TaskFailedError) as caught:
        _sweep(tmp_path, "out", RayExecutor(), log=str(log), gate=str(gate))
    message = str(caught.value)
    assert message.startswith("1 of 4 tasks (leg searches) failed, the other 3 are kept in ")
    assert list(caught.value.failures) == [f"flaky (log={log}, gate={gate}, error=ValueError, salt=2)"]
    assert "ValueError (message withheld" in message  # a plugin's message may quote memory text
    assert sorted(log.read_text().split()) == ["0", "1", "2"]
    assert _kept(tmp_path / "out") == 3
    assert not list((tmp_path / "out").glob("*"))  # the output folder: no partial set of results

    gate.unlink()
    log.write_text("")
    _sweep(tmp_path, "out", RayExecutor(), log=str(log), gate=str(gate))
    assert log.read_text().split() == ["2"]  # only the missing leg search ran again
    log.write_text("")
    _sweep(tmp_path, "local", None, log=str(log), gate=str(gate))
    assert _folder(tmp_path / "out") == {**_folder(tmp_path / "local")}


def test_an_interrupted_local_sweep_resumes_with_what_is_missing(flaky, tmp_path):
    log, gate = tmp_path / "builds.log", tmp_path / "gate"
    gate.touch()
    options = {"log": str(log), "gate": str(gate), "error": "KeyboardInterrupt"}
    with pytest.raises(KeyboardInterrupt):
        _sweep(tmp_path, "out", LocalExecutor(), **options)
    assert log.read_text().split() == ["0", "1", "2"]  # serial: bm25 (unlogged), salts 0 and 1, then 2 stops it
    assert _kept(tmp_path / "out") == 3
    gate.unlink()
    log.write_text("")
    resumed = _sweep(tmp_path, "out", None, **options)
    assert log.read_text().split() == ["2"]
    log.write_text("")
    fresh = _sweep(tmp_path, "fresh", None, **options)
    assert log.read_text().split() == ["0", "1", "2"]
    assert _folder(tmp_path / "out") == _folder(tmp_path / "fresh")
    assert resumed.best.settings == fresh.best.settings


def test_the_local_executor_raises_a_plugin_error_as_before(flaky, tmp_path):
    gate = tmp_path / "gate"
    gate.touch()
    with pytest.raises(PluginRunError, match="Retriever 'flaky' failed building its index: ValueError"):
        _sweep(tmp_path, "out", None, gate=str(gate))


def test_a_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ExtraMissingError) as caught:
        make_executor("ray")
    assert str(caught.value) == "--executor ray needs Ray, which is not installed: pip install 'recall-kit[ray]'"


def test_a_missing_ray_is_one_line_from_the_cli(tmp_path):
    import subprocess

    script = ("import sys; sys.modules['ray'] = None; from recall_kit.cli import main; "
              "sys.argv = ['recall-kit', 'sweep', '--dataset', sys.argv[1], '-r', 'bm25+fts5', '-f', 'rrf', "
              "'--grid', 'rrf.k=10,60', '--target', 'ndcg@10', '--executor', 'ray']; main()")
    done = subprocess.run([sys.executable, "-c", script, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "Error: --executor ray needs Ray, which is not installed: pip install 'recall-kit[ray]'"]


def test_unknown_executor_lists_the_known_ones():
    from recall_kit.errors import RecallKitError

    with pytest.raises(RecallKitError, match="Unknown executor 'spark'. Available: local, ray."):
        make_executor("spark")


def test_eval_of_several_configs_writes_each_result_and_equals_eval_alone(tmp_path):
    import os
    import subprocess

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "recall_kit", *args], check=False, cwd=tmp_path,
                              env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion",
                                   "RECALL_KIT_CACHE": str(tmp_path / "cache")},
                              capture_output=True, text=True, timeout=300)

    (tmp_path / "a.toml").write_text('[system]\nretriever = "bm25+fts5"\nfusion = ["rrf"]\n')
    (tmp_path / "b.toml").write_text('[system]\nretriever = "bm25+fts5"\nfusion = ["rrf"]\n[options.rrf]\nk = 10\n')
    common = ["-d", str(EXAMPLE), "--metrics", "recall@10,mrr", "--latency-sample", "0"]
    refused = cli("eval", *common, "-c", "a.toml", "-c", "b.toml")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "Error: Several --config files: give --out-dir for their results (NAME.json each)."
    done = cli("eval", *common, "-c", "a.toml", "-c", "b.toml", "--out-dir", "out")
    assert done.returncode == 0, done.stderr
    assert "Wrote 2 results to out" in done.stderr and done.stdout.count("bm25+fts5 (rrf) on memories") == 2
    alone = cli("eval", *common, "-c", "b.toml", "--json", "b.json")
    assert alone.returncode == 0, alone.stderr
    written = _folder(tmp_path / "out")
    assert sorted(written) == ["a.json", "b.json"]
    assert written["b.json"] == _without_timings(json.loads((tmp_path / "b.json").read_text()))


def test_a_local_sweep_imports_no_ray(tmp_path):
    import os
    import subprocess

    script = ("import sys; from recall_kit.cli import main; "
              "sys.argv = ['recall-kit', 'sweep', '--dataset', sys.argv[1], '-r', 'bm25+fts5', '-f', 'rrf', "
              "'--grid', 'rrf.k=10,60', '--target', 'ndcg@10', '--latency-sample', '0', '--out-dir', sys.argv[2]]\n"
              "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
              "print('RAY', 'ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script, str(EXAMPLE), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "RECALL_KIT_CACHE": str(tmp_path / "cache"),
                                                       "RECALL_KIT_LOAD_PLUGINS": "recall-kit-fts5,recall-kit-bm25,recall-kit-fusion"})
    assert done.stdout.strip().endswith("RAY False"), done.stdout + done.stderr
    assert (tmp_path / "out" / "sweep.json").is_file()
    assert not list((tmp_path / "cache" / "tasks").rglob("*.json"))  # the checkpoint went once the results were written
