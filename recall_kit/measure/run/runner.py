"""The benchmark runner: build each leg's indexes (per scope), run every query, fuse, time, score."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recall_kit.dataset import Dataset
from recall_kit.errors import PluginRunError, RecallKitError, SpecError, describe_plugin_exception
from recall_kit.measure.result import BenchmarkResult, QueryResult
from recall_kit.measure.result_sections import (
    DatasetInfo,
    IndexCost,
    LatencyStats,
    LatencySummary,
    LegIndexCost,
    LegLatency,
    SystemInfo,
    Throughput,
    build_manifest,
)
from recall_kit.measure.run.diagnostics import diagnose, empty_rankings, failed_queries, relevant_ids, weaker_than_a_leg
from recall_kit.measure.run.failures import MaxFailed, check_failed_queries
from recall_kit.measure.run.index_stats import merge_index_stats
from recall_kit.measure.run.outside import count_outside, outside_warnings
from recall_kit.measure.run.runs import FusedRun, LegRun
from recall_kit.measure.run.settings import ScoringSettings
from recall_kit.measure.score.evaluation import aggregate, metric_values, summed_names
from recall_kit.measure.score.join import judge_rankings
from recall_kit.measure.score.metric_names import MAX_CUTOFF, resolve_metrics
from recall_kit.measure.systems.adapters import ScoreTypeError, coerce_hits
from recall_kit.measure.systems.context import expand_corpus
from recall_kit.measure.systems.system import Leg, System, SystemSpec, as_system
from recall_kit.plugins import call_each
from recall_kit.progress import progress_display, stage, steps
from recall_kit.types import (
    Corpus,
    FailedSearch,
    FusionRequest,
    Hit,
    Query,
    Retriever,
    sort_hits,
)


def call_plugin(leg: str, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """Run plugin code; turn any exception into one line naming the leg (no query text).

    Any BaseException but Ctrl-C counts: a plugin's `sys.exit(0)` must not end a run as a success.
    """
    try:
        with contextlib.redirect_stdout(sys.stderr):  # a plugin's print must not corrupt `--report json`
            return function(*args)
    except (RecallKitError, KeyboardInterrupt):
        raise
    except BaseException as error:
        raise PluginRunError(f"Retriever {leg!r} failed {what}: {describe_plugin_exception(error)}") from error


def checked_hits(leg: str, output: Any, k: int, corpus: Corpus, query_id: str, own_store: bool = False) -> list[Hit]:
    """Enforce the retriever contract on one answer and put ties in trec_eval order. With
    `own_store` (a live system, `Retriever.searches_own_store`) ids outside `corpus` are kept."""
    if output is None or isinstance(output, (str, bytes)):
        raise PluginRunError(f"Retriever {leg!r} returned {type(output).__name__} for query {query_id}; expected a list of hits.")
    try:
        hits = coerce_hits(output, k)
    except (TypeError, ValueError, OverflowError) as error:
        said = str(error) if isinstance(error, ScoreTypeError) else describe_plugin_exception(error)
        raise PluginRunError(f"Retriever {leg!r} returned malformed hits for query {query_id}: {said}") from None
    ids = [hit.id for hit in hits]
    values = [hit.score for hit in hits]
    if not (corpus.holds_all(ids) and all(map(math.isfinite, values))):
        for hit in hits:
            if hit.id not in corpus and not own_store:
                raise PluginRunError(f"Retriever {leg!r} returned id {hit.id!r} for query {query_id}, which is not in the corpus it indexed.")
            if not math.isfinite(hit.score):
                raise PluginRunError(f"Retriever {leg!r} returned a non-finite score ({hit.score}) for query {query_id}.")
    scores = array("f", values).tolist()  # scores equal at float32 precision tie (see sort_hits)
    if scores != sorted(scores, reverse=True):
        raise PluginRunError(
            f"Retriever {leg!r} returned hits out of order for query {query_id}: "
            "scores must be non-increasing (best first, higher is better)."
        )
    return sort_hits(hits) if len(set(scores)) < len(scores) else hits  # tied scores: ordered by id


def scope_groups(dataset: Dataset) -> dict[str | None, list[int]]:
    """Query indexes grouped by the scope they search (None: the whole corpus)."""
    groups: dict[str | None, list[int]] = {}
    scoped = dataset.has_scopes
    for index, query in enumerate(dataset.queries):
        groups.setdefault(query.scope if scoped else None, []).append(index)
    return groups


def corpus_for(corpus: Corpus, scope: str | None) -> Corpus:
    if scope is None:
        return corpus
    return corpus.subset(lambda memory: memory.scope == scope)


def _latency_sample(count: int, sample: int | None) -> list[int]:
    """Evenly spaced query indexes for the single-path latency (all when sample is None)."""
    if sample is None or sample >= count:
        return list(range(count))
    if sample <= 0:
        return []
    return sorted({int(i) for i in np.linspace(0, count - 1, sample)})


def run_legs(
    system: System | Sequence[Leg],
    dataset: Dataset,
    depth: int,
    latency_sample: int | None = 200,
    show_progress: bool | None = None,
) -> dict[str, LegRun]:
    """Build every leg's indexes (one per scope) and run every query through each leg (of a built
    system, or legs on their own: an ablation or a sweep searches each leg once).

    Each query's batch answer comes from `search_many`; the sampled queries are also timed one
    at a time through `search`, which is what a user of the store waits for.
    """
    legs = system.legs if isinstance(system, System) else list(system)
    groups = scope_groups(dataset)
    sampled = set(_latency_sample(len(dataset.queries), latency_sample))
    runs: dict[str, LegRun] = {}
    _check_legs_per_scope(legs, groups)
    # Each leg indexes the corpus its context options make (the same ids; see recall_kit.measure.systems.context).
    expanded = {leg.name: expand_corpus(dataset.corpus, leg.context, leg.name) for leg in legs}
    # One display for the whole run, in stages: building (plugins add their own: loading a model,
    # embedding N memories), searching, timing single queries.
    # Where the run is reads "leg 2 of 3: dense > scope 4 of 10 > dense: embedding 120 memories".
    with (progress_display(show_progress), steps(len(legs) if len(legs) > 1 else 0, "leg") as begin_leg,
          steps(len(groups) if len(groups) > 1 else 0, "scope") as begin_scope):
        for leg in legs:
            begin_leg(leg.name)
            run = LegRun(leg.name, hits=[[] for _ in dataset.queries])
            sizes: list[int | None] = []
            stats_by_scope: list[dict[str, Any]] = []
            settings: frozenset[str] = frozenset()
            for number, (scope, indexes) in enumerate(groups.items(), start=1):
                begin_scope("", number)
                where = leg.name
                corpus = corpus_for(expanded[leg.name], scope)
                stage(f"{where}: building the index over {len(corpus):,} memories")
                retriever: Retriever = call_plugin(leg.name, "to start", leg.factory)
                settings = frozenset(getattr(retriever, "index_settings", ()))
                own_store = bool(getattr(retriever, "searches_own_store", False))
                run.own_store = run.own_store or own_store
                try:
                    size, stats = _build_one_index(leg.name, retriever, corpus, scope, run)
                    if own_store and hasattr(retriever, "sensitive_ids"):
                        run.sensitive |= set(call_plugin(leg.name, "naming its sensitive ids", retriever.sensitive_ids))
                    sizes.append(size)
                    stats_by_scope.append(stats)
                    _search_batch(leg.name, retriever, run, dataset, indexes, corpus, depth, own_store)
                    timed = [i for i in indexes if i in sampled]
                    _time_single_queries(leg.name, retriever, run, dataset, timed, corpus, depth, own_store)
                    # Read again after the queries: some stats (an ANN's measured recall) exist only then.
                    stats_by_scope[-1] = {**stats, **dict(call_plugin(leg.name, "reporting index stats", retriever.index_stats) or {})}
                    if hasattr(retriever, "empty_hint"):  # a live system's hint (recall-kit-remote)
                        run.empty_hint = run.empty_hint or call_plugin(leg.name, "giving its hint", retriever.empty_hint)
                finally:
                    call_plugin(leg.name, "closing", retriever.close)
            run.size_bytes = None if any(size is None for size in sizes) else int(sum(sizes))  # type: ignore[arg-type]
            run.index_stats = merge_index_stats(stats_by_scope, [len(indexes) for indexes in groups.values()],
                                                settings=settings)
            if run.failures:
                run.index_stats["failed_queries"] = len(run.failures)
            runs[leg.name] = run
    return runs


def _check_legs_per_scope(legs: Sequence[Leg], groups: dict[str | None, list[int]]) -> None:
    """`SpecError` for a single-object leg when the dataset has scopes (one index per scope)."""
    if len(groups) > 1 or None not in groups:
        for leg in legs:
            if not leg.per_scope:
                raise SpecError(
                    f"Retriever {leg.name!r} is a single object; this dataset has scopes, so it "
                    "must be a class (one index is built per scope)."
                )


def _build_one_index(
    name: str, retriever: Retriever, corpus: Corpus, scope: str | None, run: LegRun
) -> tuple[int | None, dict[str, Any]]:
    """Build leg `name`'s index over one scope's `corpus`, its time counted in `run`, and tell the
    on_index_built observers. Returns the index's size in bytes (None: unknown) and its stats."""
    started = time.perf_counter()
    call_plugin(name, "building its index", retriever.build_index, corpus)
    build_seconds = time.perf_counter() - started
    size = call_plugin(name, "reporting its index size", retriever.index_size_bytes)
    stats = dict(call_plugin(name, "reporting index stats", retriever.index_stats) or {})
    run.build_seconds += build_seconds
    run.indexes += 1
    # An observer that raises is named once and left out; the run goes on.
    call_each("on_index_built", {
        "leg": name, "retriever": retriever, "corpus": corpus,
        "stats": {"build_seconds": build_seconds, "size_bytes": size,
                  "memories": len(corpus), "scope": scope, **stats},
    })
    return size, stats


def _search_batch(
    name: str, retriever: Retriever, run: LegRun, dataset: Dataset, indexes: list[int], corpus: Corpus, depth: int,
    own_store: bool = False,
) -> None:
    """One scope's queries (`indexes` into the dataset's) through `search_many`: their hits,
    failures and ids outside `corpus` (a live system's, `own_store`) into `run`, the batch's time counted."""
    texts = [dataset.queries[i].text for i in indexes]
    advance = stage(f"{name}: searching {len(texts):,} queries", total=len(texts))
    started = time.perf_counter()
    answers = call_plugin(name, "on a batch of queries", retriever.search_many, texts, depth)
    run.batch_seconds += time.perf_counter() - started
    if len(answers) != len(indexes):
        raise PluginRunError(
            f"Retriever {name!r} answered {len(answers)} of {len(indexes)} queries in search_many."
        )
    for index, answer in zip(indexes, answers, strict=True):
        if isinstance(answer, FailedSearch):
            run.failures[index] = answer.reason
        run.hits[index] = checked_hits(name, answer, depth, corpus, dataset.queries[index].query_id, own_store)
        if own_store:
            outside = [hit.id for hit in run.hits[index] if hit.id not in corpus]
            if outside:
                run.outside[index] = outside
    advance(len(indexes))


def _time_single_queries(
    name: str, retriever: Retriever, run: LegRun, dataset: Dataset, timed: list[int], corpus: Corpus, depth: int,
    own_store: bool = False,
) -> None:
    """The sampled queries (`timed`) one at a time through `search`: each one's latency (and the
    time spent waiting on an outside system) into `run`; a failed call is a failure, not a latency."""
    if timed:  # one untimed call first: lazy model loads are not query latency
        advance = stage(f"{name}: timing {len(timed):,} single queries", total=len(timed))
        started = time.perf_counter()
        call_plugin(name, "on a query", retriever.search, dataset.queries[timed[0]].text, depth)
        first_ms = (time.perf_counter() - started) * 1000.0
        run.first_query_ms = first_ms if run.first_query_ms is None else run.first_query_ms + first_ms
    for index in timed:
        query = dataset.queries[index]
        started = time.perf_counter()
        answer = call_plugin(name, f"on query {query.query_id}", retriever.search, query.text, depth)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        checked_hits(name, answer, depth, corpus, query.query_id, own_store)
        advance(1)
        if isinstance(answer, FailedSearch):  # a failed call's time is not a search's latency
            run.failures.setdefault(index, answer.reason)
            continue
        run.latency_ms[index] = elapsed_ms
        wait = call_plugin(name, "reporting its wait", retriever.last_wait_ms)
        if wait is not None:
            run.wait_ms[index] = min(float(wait), elapsed_ms)


def fuse_one(system: System, query: Query, legs: dict[str, list[Hit]], corpus: Corpus, depth: int) -> list[Hit]:
    """Run one query's leg outputs through the fusion chain (or pass a single leg through)."""
    if not system.fusions:
        return list(next(iter(legs.values())))
    ranking: list[Hit] | None = None
    weights = system.weights
    for name, fusion in zip(system.fusion_names, system.fusions, strict=True):
        if ranking is None and not fusion.combines_legs:
            ranking = list(next(iter(legs.values())))
        request = FusionRequest(query=query, legs=legs, weights=weights, ranking=ranking, corpus=corpus, k=depth)
        try:
            output = fusion.fuse(request)
        except (RecallKitError, KeyboardInterrupt):
            raise
        except BaseException as error:
            raise PluginRunError(f"Fusion {name!r} failed on query {query.query_id}: "
                                 f"{describe_plugin_exception(error)}") from error
        try:
            ranking = sort_hits(coerce_hits(output, depth))
        except (TypeError, ValueError, OverflowError) as error:
            said = str(error) if isinstance(error, ScoreTypeError) else describe_plugin_exception(error)
            raise PluginRunError(f"Fusion {name!r} returned malformed hits for query {query.query_id}: {said}") from None
        if not all(map(math.isfinite, [hit.score for hit in ranking])):
            raise PluginRunError(f"Fusion {name!r} returned a non-finite score for query {query.query_id}.")
    return ranking or []


def to_parents(hits: Sequence[Hit], corpus: Corpus) -> list[Hit]:
    """A ranking of chunks as a ranking of their parents: each parent at its first chunk's place."""
    parents: list[Hit] = []
    seen: set[str] = set()
    for hit in hits:
        memory = corpus.get(hit.id)
        parent = memory.parent_id if memory is not None and memory.parent_id is not None else hit.id
        if parent not in seen:
            seen.add(parent)
            parents.append(Hit(parent, hit.score))
    return parents


def cutoff_depth(specs: Sequence[Any], k: int, corpus_size: int) -> int:
    """The depth to score at: k, raised to the largest cutoff asked (a metric past the scored
    depth would silently equal the metric at k), but no deeper than the corpus."""
    deepest = max((spec.rank_cutoff for spec in specs if spec.rank_cutoff is not None), default=0)
    return max(k, min(deepest, max(corpus_size, 1)))


def search_depth(system: System, dataset: Dataset, k: int, metrics: Sequence[str] | None = None) -> int:
    """How many hits each leg returns for `system` scored at `k`: what its deepest fusion step
    asks for (at least k), and at least 3k when chunks collapse into their parents. k is first
    raised to the largest cutoff of `metrics` (None: the default metrics), as `run_system` raises it."""
    k = cutoff_depth(resolve_metrics(metrics), k, len(dataset.corpus))
    depth = system.depth(k)
    if dataset.has_parents:
        depth = max(depth, 3 * k)  # several chunks of one parent collapse into one entry
    return depth


def fuse_all(system: System, dataset: Dataset, leg_runs: dict[str, LegRun], depth: int, k: int,
             relevance_level: int = 1) -> FusedRun:
    """Fuse every query's leg outputs, cut to k, and record which legs found what (each returned
    id, and each id relevant at `relevance_level`)."""
    rankings: list[list[Hit]] = []
    found_by: list[dict[str, dict[str, int]]] = []
    fusion_ms: list[float] = []
    parents = dataset.has_parents
    for index, query in enumerate(dataset.queries):
        legs = {name: run.hits[index] for name, run in leg_runs.items()}
        started = time.perf_counter()
        fused = fuse_one(system, query, legs, dataset.corpus, depth)
        fusion_ms.append((time.perf_counter() - started) * 1000.0)
        if parents:
            fused = to_parents(fused, dataset.corpus)
            legs = {name: to_parents(hits, dataset.corpus) for name, hits in legs.items()}
        ranking = fused[:k]
        rankings.append(ranking)
        relevant = relevant_ids(dataset, query.query_id, relevance_level)
        wanted = {hit.id for hit in ranking} | relevant
        found: dict[str, dict[str, int]] = {}
        for name, hits in legs.items():
            for rank, hit in enumerate(hits, start=1):
                if hit.id in wanted:
                    found.setdefault(hit.id, {})[name] = rank
        found_by.append(found)
    return FusedRun(rankings, found_by, fusion_ms)


def _leg_latency(run: LegRun) -> LegLatency:
    """A leg's single-query latency; for a leg that waits on an outside system, also the wait
    (the server's or program's answer, as the client sees it) and the rest (recall-kit's and the
    adapter's own overhead), each over the same queries."""
    waits: dict[str, Any] = {}
    if run.wait_ms:
        waits["wait"] = LatencyStats.of(list(run.wait_ms.values()))
        waits["overhead"] = LatencyStats.of([run.latency_ms[i] - wait for i, wait in run.wait_ms.items()])
    first = None if run.first_query_ms is None else round(run.first_query_ms, 4)
    return LegLatency.of(list(run.latency_ms.values()), **waits, first_query_ms=first)


def _cost(leg_runs: dict[str, LegRun], fused: FusedRun, query_count: int) -> tuple[LatencySummary, IndexCost, Throughput, dict[int, float]]:
    """Latency (system and per leg), index cost and throughput; and each sampled query's latency."""
    latency_by_query: dict[int, float] = {}
    sampled = sorted(set.intersection(*[set(run.latency_ms) for run in leg_runs.values()])) if leg_runs else []
    for query_index in sampled:
        latency_by_query[query_index] = (sum(run.latency_ms[query_index] for run in leg_runs.values())
                                         + fused.fusion_ms[query_index])
    latency = LatencySummary.of(list(latency_by_query.values()),
                                legs={name: _leg_latency(run) for name, run in leg_runs.items()})
    index = IndexCost(
        build_seconds=float(round(sum(run.build_seconds for run in leg_runs.values()), 4)),
        size_bytes=None if any(run.size_bytes is None for run in leg_runs.values())
        else sum(int(run.size_bytes or 0) for run in leg_runs.values()),
        legs={name: LegIndexCost.of(round(run.build_seconds, 4), run.size_bytes, run.indexes, run.index_stats)
              for name, run in leg_runs.items()},
    )
    search_seconds = sum(run.batch_seconds for run in leg_runs.values())
    fusion_seconds = sum(fused.fusion_ms) / 1000.0
    throughput = Throughput(queries=query_count, search_seconds=float(round(search_seconds, 4)),
                            fusion_seconds=float(round(fusion_seconds, 4)),
                            queries_per_second=float(round(query_count / max(search_seconds + fusion_seconds, 1e-9), 2)))
    return latency, index, throughput, latency_by_query


def run_benchmark(
    system: System | SystemSpec | str | Retriever | type | Callable[..., Any],
    dataset: Dataset,
    k: int = 20,
    metrics: Sequence[str] | None = None,
    latency_sample: int | None = 200,
    show_progress: bool | None = None,
    seed: int = 0,
    leg_runs: dict[str, LegRun] | None = None,
    relevance_level: int = 1,
    judged_only: bool = False,
    max_failed: MaxFailed | int | str | None = None,
) -> BenchmarkResult:
    """Build, run, fuse, time and score a system on a dataset; return its result.

    `system` may be a built System, a SystemSpec, a spec string (`"fts5"`), a Retriever class or
    instance, an object with `retrieve(query, k)`, or a bare callable `(query, k) -> ids`.
    `leg_runs` reuses legs already run (ablations and sweeps re-fuse without re-searching).
    `relevance_level` and `judged_only` are trec_eval's ``-l`` and ``-J`` (see
    `recall_kit.measure.score.join.judge_rankings`): they change how the top k is scored, not what is run.
    The system is built once here (`as_system`) and run by `run_system`.
    A query whose search failed (a `FailedSearch` from a live system) is not a miss: beyond
    `max_failed` (a count, or a share such as "5%"; default none) `FailedQueriesError` is raised
    and there is no result; those accepted are recorded in `BenchmarkResult.failed_queries`.
    """
    _check_k(k)
    settings = ScoringSettings.of(k=k, metrics=metrics, relevance_level=relevance_level, judged_only=judged_only,
                                  latency_sample=latency_sample, seed=seed, max_failed=max_failed)
    built = as_system(system)
    return run_system(built, dataset, settings, depth=search_depth(built, dataset, k, metrics),
                      show_progress=show_progress, leg_runs=leg_runs)


def run_system(system: System, dataset: Dataset, settings: ScoringSettings, *, depth: int,
               show_progress: bool | None = None, leg_runs: dict[str, LegRun] | None = None) -> BenchmarkResult:
    """Run, fuse, time and score a built `system` whose legs search `depth` hits (`search_depth`,
    worked out once by the caller) with `settings` (checked when made: `ScoringSettings.of`); the
    rest as `run_benchmark`. Nothing is built or resolved here."""
    _check_k(settings.k)
    relevance_level, judged_only = settings.relevance_level, settings.judged_only
    specs = resolve_metrics(None if settings.metrics is None else list(settings.metrics))
    k_asked, k = settings.k, cutoff_depth(specs, settings.k, len(dataset.corpus))
    started_all = time.perf_counter()
    if leg_runs is None:
        leg_runs = run_legs(system, dataset, depth, settings.latency_sample, show_progress)
    # A failed query is not a miss: beyond `max_failed` (default none) there is no result.
    failed = check_failed_queries(leg_runs, dataset.queries, settings.max_failed)
    fused = fuse_all(system, dataset, leg_runs, depth, k, relevance_level)

    query_ids = [query.query_id for query in dataset.queries]
    judged = judge_rankings(query_ids, [[hit.id for hit in r] for r in fused.rankings], dataset.qrels, depth=k,
                            relevance_level=relevance_level, judged_only=judged_only)
    values = metric_values(judged, specs)
    summary = aggregate(values, [query.stratum for query in dataset.queries], summed_names(specs))
    attribution, warnings = diagnose(system, dataset, fused, judged, k, relevance_level)
    if len(leg_runs) > 1:
        warnings.extend(weaker_than_a_leg(system, _leg_hits(leg_runs, dataset), query_ids, dataset, specs, values,
                                          k, relevance_level=relevance_level, judged_only=judged_only))
    if k != k_asked:
        raised = [spec.name for spec in specs if spec.rank_cutoff is not None and spec.rank_cutoff > k_asked]
        warnings.insert(0, (
            f"k raised from {k_asked} to {k} so that {', '.join(raised)} "
            f"{'is' if len(raised) == 1 else 'are'} measured: every metric is scored on the top {k}."
        ))
    empty_counts, empty_warnings = empty_rankings(leg_runs)
    outside = count_outside(leg_runs, dataset.queries, dataset.sensitive_ids)
    warnings[1 if k != k_asked else 0:0] = (outside_warnings(outside, len(dataset.queries))
                                            + failed_queries(leg_runs, dataset.queries) + empty_warnings)
    latency, index_cost, throughput, latency_by_query = _cost(leg_runs, fused, len(dataset.queries))
    queries = _query_results(dataset, fused, values, latency_by_query)
    return BenchmarkResult(
        system=SystemInfo.of(system),
        dataset=DatasetInfo.of(dataset),
        k=k,
        k_requested=k_asked,
        depth=depth,
        metric_names=[spec.name for spec in specs],
        relevance_level=relevance_level,
        judged_only=judged_only,
        overall=summary["overall"],
        strata=summary["strata"],
        queries=queries,
        attribution=attribution,
        attribution_depth=k,
        empty_rankings=empty_counts,
        outside_corpus=outside,
        failed_queries=failed,
        warnings=warnings,
        latency=latency,
        index=index_cost,
        throughput=throughput,
        wall_seconds=round(time.perf_counter() - started_all, 4),
        manifest=build_manifest(system, settings.seed),
    )


def _leg_hits(leg_runs: dict[str, LegRun], dataset: Dataset) -> dict[str, list[list[Hit]]]:
    """Each leg's hits per query at the level scored: parents where the corpus has chunks."""
    if not dataset.has_parents:
        return {name: run.hits for name, run in leg_runs.items()}
    return {name: [to_parents(hits, dataset.corpus) for hits in run.hits] for name, run in leg_runs.items()}


def _check_k(k: int) -> None:
    """`SpecError` unless 1 <= k <= MAX_CUTOFF."""
    if k < 1:
        raise SpecError(f"k must be at least 1, got {k}.")
    if k > MAX_CUTOFF:  # -k 10**30 ended in an OverflowError inside a retriever; as deep as a cutoff may be
        raise SpecError(f"k must be at most {MAX_CUTOFF:,}, got {k}.")


def _query_results(
    dataset: Dataset, fused: FusedRun, values: dict[str, np.ndarray], latency_by_query: dict[int, float]
) -> list[QueryResult]:
    """Each query's result: its fused ranking and scores, metric values, which legs found what, latency."""
    return [
        QueryResult(
            query_id=query.query_id,
            stratum=query.stratum,
            ranking=[hit.id for hit in fused.rankings[i]],
            scores=[round(hit.score, 6) for hit in fused.rankings[i]],
            metrics={name: round(float(array[i]), 6) for name, array in values.items()},
            found_by=fused.found_by[i],
            scope=query.scope,
            latency_ms=round(latency_by_query[i], 4) if i in latency_by_query else None,
        )
        for i, query in enumerate(dataset.queries)
    ]
