"""The study's dense step against raw `SentenceTransformer.encode` of the same texts, in one run.

    python benchmarks/bench_dense_study.py --locomo locomo-dev.json \
        [--models all-MiniLM-L6-v2,all-mpnet-base-v2] [--conversations 5] [--sessions N] [--torch]

For each model: the LoCoMo conversations imported (per-conversation scopes, as `study` does), the
dense recipe (examples/systems/dense.toml: each turn with one neighbour on each side) with the model
swapped in, then, on the same model object and the same machine, interleaved:

- raw: `SentenceTransformer.encode` of exactly the texts the leg embeds (each scope's
  context-expanded turns, as one call per scope, batch size 64, normalised), then of the questions;
- step: `run_benchmark` of the recipe with an empty embedding cache (what `study run`'s
  `run/dense` step does: every scope's index, every question in one batch, 40 questions timed
  one by one, scoring), on the default backend (ONNX Runtime on a CPU; its one-time export made
  beforehand and timed apart: a user pays it once per model, not per step), and with `--torch`
  also with `-o dense.backend=torch` (its recall@5 against the default's beside it).

Prints each time, the ratio step / raw (target <= 1.0) and `uptime`. Nothing of the conversations'
text is printed or written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "examples" / "systems" / "dense.toml"


def load_conversations(path: Path, count: int, folder: Path, sessions: int | None = None) -> Any:
    """The first `count` conversations of a LoCoMo file (with `sessions`, their first sessions
    only: the importer then drops evidence outside them), imported and loaded."""
    from recall_kit import import_dataset, load_dataset

    data = json.loads(path.read_text(encoding="utf-8"))
    if sessions is not None:
        for conversation in data:
            turns = conversation["conversation"]
            for key in [key for key in turns if key.startswith("session_")]:
                if int(key.split("_")[1]) > sessions:
                    del turns[key]
    subset = folder / "locomo.json"
    subset.write_text(json.dumps(data[:count]), encoding="utf-8")
    import_dataset("locomo", subset, folder / "dataset")
    return load_dataset(folder / "dataset")


def leg_texts(dataset: Any, spec: Any) -> list[list[str]]:
    """Each scope's texts as the dense leg embeds them (context expansion, then memory_text)."""
    from recall_kit_dense.retriever import DenseRetriever, memory_text

    from recall_kit.measure.run.runner import corpus_for, scope_groups
    from recall_kit.measure.systems.context import expand_corpus, split_leg_options

    plugin_options, context = split_leg_options("dense", spec.options.get("dense", {}))
    fields = DenseRetriever.Options(**{k: v for k, v in plugin_options.items() if k == "fields"}).fields
    texts = []
    for scope in scope_groups(dataset):
        corpus = expand_corpus(corpus_for(dataset.corpus, scope), context, "dense")
        texts.append([memory_text(memory, fields) for memory in corpus])
    return texts


def raw_encode(model: Any, groups: list[list[str]], prompt: str | None = None) -> float:
    started = time.perf_counter()
    for texts in groups:
        model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                     show_progress_bar=False, prompt=prompt)
    return time.perf_counter() - started


def step(spec: Any, dataset: Any, cache: Path, exports: Path) -> tuple[float, dict[str, float]]:
    """`run_benchmark` of `spec` with an empty embedding cache in `cache`, holding links to the
    ONNX exports in `exports` (a `<cache>/dense/onnx` folder) and to the packaged models assembled
    beside them (`<cache>/models`: all-mpnet-base-v2 is assembled from its packages once, as the
    export is made once; without them the step assembled and exported it again, 10 s of its 25)."""
    import shutil

    from recall_kit import run_benchmark

    shutil.copytree(exports, cache / "dense" / "onnx", copy_function=os.link)
    assembled = exports.parent.parent / "models"
    if assembled.is_dir():
        shutil.copytree(assembled, cache / "models", copy_function=os.link)
    os.environ["RECALL_KIT_CACHE"] = str(cache)
    started = time.perf_counter()
    result = run_benchmark(spec, dataset, k=10, metrics=["recall@5", "ndcg@10", "mrr"],
                           latency_sample=40, show_progress=False)
    seconds = time.perf_counter() - started
    return seconds, {name: float(value) for name, value in result.overall.items()
                     if name in ("recall@5", "ndcg@10", "mrr")}


def export(model_name: str, work: Path) -> tuple[Path, float]:
    """The model's ONNX export, made once into `work/exports` (the folder, and its seconds)."""
    from recall_kit_dense.models import resolve_model
    from recall_kit_dense.onnx_backend import load_onnx_model

    os.environ["RECALL_KIT_CACHE"] = str(work / "exports")
    started = time.perf_counter()
    load_onnx_model(resolve_model(model_name), None, 1)
    return work / "exports" / "dense" / "onnx", time.perf_counter() - started


def measure(model_name: str, dataset: Any, work: Path, with_torch: bool) -> dict[str, Any]:
    from dataclasses import replace

    from recall_kit_dense.models import load_model, resolve_model

    from recall_kit.measure.systems.system import load_config

    base = load_config(RECIPE)
    options = {**base.options, "dense": {**base.options.get("dense", {}), "model": model_name}}
    spec = replace(base, options=options)
    groups = leg_texts(dataset, spec)
    questions = [[query.text for query in dataset.queries]]
    exports, export_seconds = export(model_name, work)
    loaded = load_model(resolve_model(model_name), "cpu")  # torch's SentenceTransformer
    model = loaded.model
    raw_corpus = [raw_encode(model, groups)]
    raw_queries = raw_encode(model, questions)
    step_seconds, metrics = step(spec, dataset, work / f"cache-{len(os.listdir(work))}", exports)
    raw_corpus.append(raw_encode(model, groups))
    raw = sum(raw_corpus) / len(raw_corpus) + raw_queries
    row: dict[str, Any] = {
        "model": model_name, "memories": sum(len(g) for g in groups), "questions": len(questions[0]),
        "raw_corpus_s": [round(s, 2) for s in raw_corpus], "raw_questions_s": round(raw_queries, 2),
        "export_once_s": round(export_seconds, 2),
        "step_s": round(step_seconds, 2), "ratio": round(step_seconds / raw, 3),
        "ratio_to_corpus_only": round(step_seconds / (sum(raw_corpus) / len(raw_corpus)), 3),
        "metrics": metrics,
    }
    if with_torch:
        on_torch = {**options, "dense": {**options["dense"], "backend": "torch"}}
        torch_seconds, torch_metrics = step(replace(spec, options=on_torch), dataset,
                                            work / f"cache-{len(os.listdir(work))}", exports)
        row.update(torch_step_s=round(torch_seconds, 2), torch_ratio=round(torch_seconds / raw, 3),
                   torch_metrics=torch_metrics,
                   torch_recall5_delta=round(torch_metrics["recall@5"] - metrics["recall@5"], 4))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="a LoCoMo JSON file (locomo10.json's format)")
    parser.add_argument("--models", default="all-MiniLM-L6-v2,all-mpnet-base-v2")
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=None,
                        help="only each conversation's first N sessions (a smaller, quicker run)")
    parser.add_argument("--torch", action="store_true", help="also the step with -o dense.backend=torch")
    parser.add_argument("--max-ratio", type=float, default=1.0)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"start: {uptime}; cpus {os.cpu_count()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-dense-study-") as temporary:
        work = Path(temporary)
        dataset = load_conversations(args.locomo, args.conversations, work, args.sessions)
        (work / "caches").mkdir()
        for name in args.models.split(","):
            row = measure(name.strip(), dataset, work / "caches", args.torch)
            print(json.dumps(row), flush=True)
            rows.append(row)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"end: {uptime}")
    for row in rows:  # run_all.py's summary reads these lines
        print(f"BAR study dense step / raw encode, {row['model']}: {row['ratio']} (target <= {args.max_ratio}) "
              f"{'PASS' if row['ratio'] <= args.max_ratio else 'FAIL'}")
    failed = [row["model"] for row in rows if row["ratio"] > args.max_ratio]
    if failed:
        print(f"step / raw encode above {args.max_ratio} for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
