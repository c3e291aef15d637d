"""The pool step: `recall-kit pool`, every system's unjudged ids at the pool depth; and the share of
unjudged ids in each system's top k at the hook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from recall_kit.fileio import write_jsonl_atomic
from recall_kit.study.config import StudyConfig
from recall_kit.study.pipeline.declare import Artefacts
from recall_kit.study.steps.common import StepRule, write_output


@dataclass
class PoolOutput:
    """pool.json: the pool of unjudged ids every system returned at `depth`, and the holes at the hook's k."""

    depth: int
    #: System -> {"returned": ids in its tops, "unjudged": of those, how many no label judges}.
    counts: dict[str, dict[str, int]]
    #: Unjudged ids pooled, over how many queries.
    ids: int
    queries: int
    #: System -> the share of its top `hook_k` that no label judges.
    unjudged_share_at_hook_k: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolReads:
    """The pool: the systems pooled, the pool's depth, and the hook's k (the unjudged share there)."""

    systems: list[str]
    depth: int
    hook_k: int


def pool_reads(config: StudyConfig) -> PoolReads:
    return PoolReads([s.name for s in config.systems], config.pool_depth, config.hook_k)


def make_pool(reads: PoolReads, artefacts: Artefacts, folder: Path) -> None:
    """`recall-kit pool`: every system's unjudged ids at the pool depth; and the holes at the hook's k."""
    from recall_kit.curate.pool import pool_unjudged
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.result import load_result

    dataset = load_dataset(artefacts.path("evaluation-set"))
    named = [(name, load_result(artefacts.path(f"run/{name}") / "result.json")) for name in reads.systems]
    pool = pool_unjudged(named, dataset, depth=reads.depth)
    write_jsonl_atomic(folder / "pool.jsonl", pool.rows)
    holes = {}
    for name, result in named:
        top = [doc for query_id, ranking in result.rankings().items() for doc in ranking[:reads.hook_k]
               if doc not in dataset.qrels.get(query_id, {})]
        returned = sum(len(ranking[:reads.hook_k]) for ranking in result.rankings().values())
        holes[name] = round(len(top) / returned, 4) if returned else 0.0
    write_output(folder / "pool.json", PoolOutput(depth=pool.depth, counts=pool.counts,
                                                  ids=sum(len(row["doc_ids"]) for row in pool.rows),
                                                  queries=len(pool.rows), unjudged_share_at_hook_k=holes))


def pool_command(reads: PoolReads, folder: Path) -> str:
    return (f"recall-kit pool {' '.join(f'steps/run/{n}/result.json' for n in reads.systems)} "
            f"--depth {reads.depth} --dataset steps/evaluation-set --out pool.jsonl")


RULE = StepRule("pool", PoolReads, lambda at, _: pool_reads(at.config), make_pool, reproduce=pool_command,
                needs=lambda at: ["evaluation-set", *(f"run/{s.name}" for s in at.config.systems)])
