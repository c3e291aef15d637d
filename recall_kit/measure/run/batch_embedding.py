"""A distributed run's embedding of large corpora: before the leg searches, every leg whose
retriever embeds in batches (`recall_kit.types.EmbedsInBatches`, the `dense` one) has the batches
its cache is missing embedded as executor tasks (each asking for a GPU where the leg's options put
it on one and the cluster has GPUs), and the cache written once from this process; the leg's
search task then reads its embeddings from that cache. The host never sees what a batch holds or
what an embedding is. Local runs skip this: their legs embed inside `build_index` as before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recall_kit.dataset import Dataset
from recall_kit.measure.run.executor import Executor, Task, task_key
from recall_kit.measure.run.runner import call_plugin, corpus_for, scope_groups
from recall_kit.measure.systems.context import expand_corpus
from recall_kit.measure.systems.system import Leg
from recall_kit.progress import progress_display
from recall_kit.types import Corpus, EmbedsInBatches


def leg_corpora(leg: Leg, dataset: Dataset) -> list[Corpus]:
    """The corpora a run builds `leg`'s indexes over: one per scope, as the leg's context makes them."""
    expanded = expand_corpus(dataset.corpus, leg.context, leg.name)
    return [corpus_for(expanded, scope) for scope in scope_groups(dataset)]


#: In a worker: the retrievers that embed batches, one per leg configuration (models load once).
_EMBEDDERS: dict[str, Any] = {}


def embed_batch(key: str, leg: Leg, batch: Any) -> Any:
    """One batch embedded by a fresh instance of the leg's retriever: a task."""
    embedder = _EMBEDDERS.get(key)
    if embedder is None:
        embedder = _EMBEDDERS[key] = call_plugin(leg.name, "to start", leg.factory)
    return call_plugin(leg.name, "embedding a batch", embedder.embed_batch, batch)


def embed_in_batches(executor: Executor, dataset: Dataset, legs: dict[str, tuple[Leg, str, float]],
                     show_progress: bool | None = None) -> int:
    """Embed, as tasks, the batches the caches of `legs` miss for `dataset`, and write each cache
    from here. `legs` maps a leg key to (leg, the label its search task shows, the GPUs it asks
    for), as the leg searches give them. Returns how many batch tasks ran (0: nothing was missing)."""
    plans: list[tuple[str, Any, Corpus, list[Task]]] = []
    planners: list[Any] = []
    try:
        for key, (leg, label, gpus) in legs.items():
            planner = call_plugin(leg.name, "to start", leg.factory)
            planners.append(planner)
            if not isinstance(planner, EmbedsInBatches):
                continue
            for number, corpus in enumerate(leg_corpora(leg, dataset)):
                batches: Sequence[Any] = call_plugin(leg.name, "planning its embedding", planner.embedding_work, corpus)
                tasks = [Task(task_key("embed", key, number, index), f"{label} batch {index + 1} of {len(batches)}",
                              embed_batch, (key, leg, batch), gpus)
                         for index, batch in enumerate(batches)]
                if tasks:
                    plans.append((leg.name, planner, corpus, tasks))
        every = [task for _, _, _, tasks in plans for task in tasks]
        if not every:
            return 0
        with progress_display(show_progress):
            done = executor.run(every, "embedding batches")
        for name, planner, corpus, tasks in plans:
            call_plugin(name, "storing its embeddings", planner.store_embeddings, corpus,
                  [done[task.key] for task in tasks])
        return len(every)
    finally:
        for planner in planners:
            close = getattr(planner, "close", None)
            if callable(close):
                close()


__all__ = ["embed_batch", "embed_in_batches", "leg_corpora"]
