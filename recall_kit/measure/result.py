"""The result document (schema recall-kit/result/1): BenchmarkResult and QueryResult, built from the
typed sections (result_sections.py), saved, loaded and validated. Presenting it: result_report.py."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.document_reader import DocumentReader
from recall_kit.errors import ResultFileError, UnknownNameError
from recall_kit.fileio import is_special_file, write_json_atomic
from recall_kit.measure.result_sections import (
    PRIVACY_PREFIX,
    SCHEMA,
    DatasetInfo,
    IndexCost,
    LatencySummary,
    LegAttribution,
    LegOutsideCorpus,
    Manifest,
    SystemInfo,
    Throughput,
)
from recall_kit.types import Hit

__all__ = [  # the sections' names too: `recall_kit.measure.result` is where a reader finds the document
    "PRIVACY_PREFIX", "SCHEMA", "BenchmarkResult", "DatasetInfo", "IndexCost", "LatencySummary", "LegAttribution",
    "LegOutsideCorpus", "Manifest", "QueryResult", "SystemInfo", "Throughput", "load_result", "load_results",
]


@dataclass(frozen=True)
class QueryResult:
    """One query's entry in a result: its fused ranking, per-query metric values and attribution."""

    query_id: str
    stratum: str
    #: Document ids of the scored ranking, best first (trec_eval order), at most k of them.
    ranking: list[str]
    #: The fused score of each ranked id.
    scores: list[float]
    #: Metric name -> this query's value.
    metrics: dict[str, float]
    #: Id -> {leg: rank in that leg's own list}, for returned and relevant ids.
    found_by: dict[str, dict[str, int]] = field(default_factory=dict)
    scope: str | None = None
    #: Single-path latency of this query in ms (sampled queries only).
    latency_ms: float | None = None

    @classmethod
    def parse(cls, read: DocumentReader, entry: dict[str, Any], where: str, query_id: str,
              names: Sequence[str], bounds: dict[str, tuple[float, float] | None]) -> QueryResult:
        """One entry of `queries` (its id already read), its metric values within their bounds."""
        values = read.mapping(entry, "metrics", f"{where}.metrics")
        for name in names:
            _check_share(read, name, read.number(values, name, f"{where}.metrics.{name}"),
                         f"{where} (query {query_id!r})", bounds[name])
        ranking = read.strings(entry, "ranking", f"{where}.ranking")
        if len(set(ranking)) != len(ranking):
            twice = next(doc for position, doc in enumerate(ranking) if doc in ranking[:position])
            raise read.error(f"{where}.ranking holds {twice!r} twice")
        scores = read.finite_list(read.sequence(entry, "scores", f"{where}.scores"), f"{where}.scores")
        if len(scores) != len(ranking):
            raise read.error(f"{where}: {len(ranking)} ranked ids but {len(scores)} scores")
        latency = entry.get("latency_ms")
        if latency is not None:
            latency = read.non_negative(read.number(entry, "latency_ms", f"{where}.latency_ms"),
                                        f"{where}.latency_ms")
        return cls(
            query_id=query_id,
            stratum=read.string(entry, "stratum", f"{where}.stratum"),
            ranking=ranking,
            scores=scores,
            metrics={name: float(value) for name, value in values.items()},
            found_by=dict(entry.get("found_by") or {}),
            scope=None if entry.get("scope") is None else str(entry["scope"]),
            latency_ms=None if latency is None else float(latency),
        )

    def hits(self) -> list[Hit]:
        return [Hit(doc, score) for doc, score in zip(self.ranking, self.scores, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"query_id": self.query_id, "stratum": self.stratum, "ranking": self.ranking,
                                 "scores": self.scores, "metrics": self.metrics, "found_by": self.found_by}
        if self.scope is not None:
            entry["scope"] = self.scope
        if self.latency_ms is not None:
            entry["latency_ms"] = self.latency_ms
        return entry


@dataclass
class BenchmarkResult:
    """One system's result on one dataset: the one place that builds, validates and reads the
    `recall-kit/result/1` document. Everything else asks it (accessors), never the raw JSON."""

    #: The system: spec, label, legs (name, plugin, weight, options), fusion chain.
    system: SystemInfo
    #: The dataset: name, path, fingerprint, counts.
    dataset: DatasetInfo
    k: int
    depth: int
    metric_names: list[str]
    #: Metric name -> its summary over every query (the mean; a count's sum). Use `mean(metric)`.
    #: A query count mixed in as "n" (as `aggregate` returns it) is dropped: `n_queries` says it.
    overall: dict[str, float]
    #: Stratum -> (metric name -> its summary over the stratum's queries). Use `mean(metric, stratum)`;
    #: a mixed-in "n" is dropped: `stratum_size(stratum)` says it.
    strata: dict[str, dict[str, float]]
    queries: list[QueryResult]
    #: Leg -> what it contributed (systems of several legs; measured at `attribution_depth`).
    attribution: dict[str, LegAttribution] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: The system's single-query latency in ms, and each leg's (`latency.legs`).
    latency: LatencySummary = field(default_factory=LatencySummary)
    #: Build cost and index size, the system's and each leg's (`index.legs`).
    index: IndexCost = field(default_factory=IndexCost)
    throughput: Throughput = field(default_factory=Throughput)
    wall_seconds: float = 0.0
    manifest: Manifest = field(default_factory=Manifest)
    #: Grades >= it counted as relevant for the binary metrics (trec_eval -l).
    relevance_level: int = 1
    #: Whether unjudged ids were dropped from each ranking before scoring (trec_eval -J).
    judged_only: bool = False
    #: The k asked for; `k` is larger when a metric's cutoff lay past it (None: not recorded).
    k_requested: int | None = None
    #: The depth the attribution was measured at: each leg's own top k (None: not recorded).
    attribution_depth: int | None = None
    #: Leg name -> queries it answered with no hits.
    empty_rankings: dict[str, int] = field(default_factory=dict)
    #: Live leg name -> its hits outside the corpus and sensitive hits (in-process legs: absent).
    outside_corpus: dict[str, LegOutsideCorpus] = field(default_factory=dict)
    #: Leg name -> {query id: why its search failed}, for failures accepted with --max-failed
    #: (scored as empty rankings; compare and gate refuse a result that has any).
    failed_queries: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.overall = {name: value for name, value in self.overall.items() if name != "n"}
        self.strata = {stratum: {name: value for name, value in means.items() if name != "n"}
                       for stratum, means in self.strata.items()}

    # -- reading ---------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return str(self.system.label or self.system.spec)

    @property
    def fingerprint(self) -> str | None:
        return self.dataset.fingerprint

    @property
    def query_ids(self) -> list[str]:
        return [query.query_id for query in self.queries]

    @property
    def n_queries(self) -> int:
        """How many queries were scored."""
        return len(self.queries)

    def mean(self, metric: str, stratum: str | None = None) -> float:
        """The mean of `metric` over every query, or over the queries of `stratum`."""
        means = self.overall if stratum is None else self.strata.get(stratum)
        if means is None:
            raise UnknownNameError(stratum or "", list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        if metric not in self.metric_names:
            raise UnknownNameError(metric, self.metric_names,
                                   f"Metric {metric!r} was not scored. Scored: {', '.join(self.metric_names)}.")
        return float(means[metric])

    def stratum_size(self, stratum: str | None = None) -> int:
        """How many queries `stratum` holds (every query when None)."""
        if stratum is None:
            return self.n_queries
        size = sum(1 for query in self.queries if query.stratum == stratum)
        if not size and stratum not in self.strata:
            raise UnknownNameError(stratum, list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        return size

    def means(self, stratum: str | None = None) -> dict[str, float]:
        """Metric name -> its summary (the mean; a count's sum) over every query or over `stratum`'s."""
        if stratum is not None and stratum not in self.strata:
            raise UnknownNameError(stratum, list(self.strata),
                                   f"No stratum {stratum!r} in this result. Strata: {', '.join(sorted(self.strata))}.")
        return dict(self.overall if stratum is None else self.strata[stratum])

    def summary_document(self, stratum: str | None = None) -> dict[str, float]:
        """`means(stratum)` as the result document writes them: with the query count as "n"."""
        return {**self.means(stratum), "n": self.stratum_size(stratum)}

    def stratum_of(self) -> dict[str, str]:
        """query_id -> stratum."""
        return {query.query_id: query.stratum for query in self.queries}

    def per_query(self, metric: str) -> dict[str, float]:
        """query_id -> value of `metric` for every query."""
        return {query.query_id: query.metrics[metric] for query in self.queries}

    @property
    def sensitive_hits(self) -> int:
        """Hits on memories the dataset marks sensitive, over every live leg and query."""
        return sum(leg.sensitive_hits for leg in self.outside_corpus.values())

    def sensitive_queries(self) -> list[str]:
        """The queries for which some live leg returned a sensitive memory, in query order."""
        hit = {query for leg in self.outside_corpus.values() for query in leg.sensitive}
        return [query_id for query_id in self.query_ids if query_id in hit]

    def rankings(self) -> dict[str, list[str]]:
        """query_id -> ranked document ids."""
        return {query.query_id: query.ranking for query in self.queries}

    def latencies(self) -> list[float]:
        """The sampled single-query latencies in ms, in query order."""
        return [query.latency_ms for query in self.queries if query.latency_ms is not None]

    # -- writing ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        document = {
            "schema": SCHEMA,
            "system": self.system.to_dict(),
            "dataset": self.dataset.to_dict(),
            "k": self.k,
            "k_requested": self.k if self.k_requested is None else self.k_requested,
            "depth": self.depth,
            "metrics": {"names": self.metric_names, "relevance_level": self.relevance_level,
                        "judged_only": self.judged_only, "overall": self.summary_document(),
                        "strata": {stratum: self.summary_document(stratum) for stratum in self.strata}},
            "attribution": {leg: counts.to_dict() for leg, counts in self.attribution.items()},
            "attribution_depth": self.k if self.attribution_depth is None else self.attribution_depth,
            "empty_rankings": self.empty_rankings,
            **({"outside_corpus": {leg: found.to_dict() for leg, found in self.outside_corpus.items()}}
               if self.outside_corpus else {}),
            "warnings": self.warnings,
            "queries": [query.to_dict() for query in self.queries],
            "latency_ms": self.latency.to_dict(),
            "index": self.index.to_dict(),
            "throughput": self.throughput.to_dict(),
            "wall_seconds": self.wall_seconds,
            "manifest": self.manifest.to_dict(),
        }
        if self.failed_queries:  # only a result with accepted failures has the key (older files stay as they were)
            document["failed_queries"] = self.failed_queries
        return document

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_dict())

    def write_run(self, path: str | Path, tag: str | None = None) -> None:
        """The rankings as a TREC run file (`qid Q0 docid rank score tag`), tagged with the spec."""
        from recall_kit.measure.score.trec import write_run

        write_run(path, {query.query_id: query.hits() for query in self.queries},
                  tag=tag or self.system.spec or "recall-kit")

    # -- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> BenchmarkResult:
        source = Path(path)
        if is_special_file(source):  # a named pipe would block for ever
            raise ResultFileError(f"{source}: not a regular file (a named pipe or a device).")
        try:
            # An integer too long for int() (4,300 digits) is read as inf, so the field it sits in
            # is named ("queries[0].metrics.ndcg@10 is inf") rather than the file alone.
            data = json.loads(source.read_text(encoding="utf-8"), parse_int=_integer_or_inf)
        except FileNotFoundError:
            raise ResultFileError(f"{source}: no such result file.") from None
        except IsADirectoryError:
            raise ResultFileError(f"{source}: is a directory, not a result file.") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            raise ResultFileError(f"{source}: not a JSON result file ({reason}).") from None
        except OSError as error:
            raise ResultFileError(f"{source}: cannot be read ({error.strerror}).") from None
        except ValueError as error:  # a number of more than 4300 digits
            raise ResultFileError(f"{source}: not a JSON result file ({str(error).split(';')[0]}).") from None
        return cls.from_dict(data, source=str(source))

    @classmethod
    def from_dict(cls, data: Any, source: str = "result") -> BenchmarkResult:
        """Validate a result document and build the typed result; a malformed one raises
        ResultFileError naming the file and the field at fault."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else None
            raise ResultFileError(f"{source}: expected schema {SCHEMA!r}, found {found!r}.")
        read = DocumentReader(source, SCHEMA)
        metrics = read.mapping(data, "metrics")
        names = read.strings(metrics, "names", "metrics.names")
        bounds = _metric_bounds(names)
        queries = _parse_queries(read, data, names, bounds)
        overall, strata = _parse_means(read, metrics, names, bounds)
        return cls(
            system=SystemInfo.parse(read, read.mapping(data, "system")),
            dataset=DatasetInfo.parse(read, read.mapping(data, "dataset")),
            k=int(read.number(data, "k")),
            depth=int(read.number(data, "depth" if "depth" in data else "k")),
            metric_names=names,
            overall=overall,
            strata=strata,
            queries=queries,
            attribution={str(leg): LegAttribution.parse(read, counts, f"attribution.{leg}")
                         for leg, counts in (read.optional_mapping(data, "attribution") or {}).items()},
            warnings=[str(w) for w in data.get("warnings") or []],
            latency=LatencySummary.parse(read, data.get("latency_ms") or {}),
            index=IndexCost.parse(read, data.get("index") or {}),
            throughput=Throughput.parse(read, data.get("throughput") or {}),
            wall_seconds=float(data.get("wall_seconds") or 0.0),
            manifest=Manifest.parse(read, data.get("manifest") or {}),
            relevance_level=int(read.number(metrics, "relevance_level", "metrics.relevance_level"))
            if "relevance_level" in metrics else 1,
            judged_only=bool(metrics.get("judged_only", False)),
            k_requested=None if data.get("k_requested") is None else int(data["k_requested"]),
            attribution_depth=None if data.get("attribution_depth") is None else int(data["attribution_depth"]),
            empty_rankings={str(leg): int(n) for leg, n in (data.get("empty_rankings") or {}).items()},
            outside_corpus={str(leg): LegOutsideCorpus.parse(read, found, f"outside_corpus.{leg}")
                            for leg, found in (read.optional_mapping(data, "outside_corpus") or {}).items()},
            failed_queries=_failed_queries(read, data, {query.query_id for query in queries}),
        )

    @property
    def n_failed(self) -> int:
        """How many queries failed on some leg (accepted with --max-failed; 0 for a whole result)."""
        return len({query_id for per_leg in self.failed_queries.values() for query_id in per_leg})


def _parse_queries(read: DocumentReader, data: dict[str, Any], names: Sequence[str],
                   bounds: dict[str, tuple[float, float] | None]) -> list[QueryResult]:
    """`queries`: each entry an object with an id of its own."""
    queries: list[QueryResult] = []
    seen: set[str] = set()
    for index, entry in enumerate(read.sequence(data, "queries")):
        where = f"queries[{index}]"
        if not isinstance(entry, dict):
            raise read.error(f"{where} is not an object")
        query_id = read.string(entry, "query_id", f"{where}.query_id")
        if query_id in seen:
            raise read.error(f"{where}: query {query_id!r} appears twice")
        seen.add(query_id)
        queries.append(QueryResult.parse(read, entry, where, query_id, names, bounds))
    return queries


def _parse_means(read: DocumentReader, metrics: dict[str, Any], names: Sequence[str],
                 bounds: dict[str, tuple[float, float] | None]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """`metrics.overall` (each scored metric within its bounds) and `metrics.strata`, less their "n"."""
    overall = read.mapping(metrics, "overall", "metrics.overall")
    strata = read.mapping(metrics, "strata", "metrics.strata")
    for name in names:
        _check_share(read, name, read.number(overall, name, f"metrics.overall.{name}"), "metrics.overall",
                     bounds[name])
    for stratum, means in strata.items():
        read.object(means, f"metrics.strata.{stratum}")
    return ({str(name): float(value) for name, value in overall.items() if name != "n"},
            {str(s): {str(name): float(value) for name, value in v.items() if name != "n"} for s, v in strata.items()})


def _integer_or_inf(digits: str) -> int | float:
    """A JSON integer as int, or inf past the 4,300 digits int() reads (sys.int_info)."""
    try:
        return int(digits)
    except ValueError:
        return math.inf if not digits.startswith("-") else -math.inf


def _metric_bounds(names: Sequence[str]) -> dict[str, tuple[float, float] | None]:
    """Each metric name's bounds (`Metric.bounds` of its registered family); None for a metric
    not registered here (a plugin's, not installed) or declared unbounded."""
    import recall_kit.registry as registry

    entries = registry.metrics.all()
    families = {name: name.split("@", 1)[0] for name in names}
    return {name: entries[family].obj.bounds if family in entries else None for name, family in families.items()}


def _check_share(read: DocumentReader, name: str, value: float, where: str,
                 bounds: tuple[float, float] | None) -> None:
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise read.error(f"{where}: metric {name!r} is {value}, outside [{bounds[0]:g}, {bounds[1]:g}]")


def _failed_queries(read: DocumentReader, data: dict[str, Any], query_ids: set[str]) -> dict[str, dict[str, str]]:
    """`failed_queries`: leg -> {query id of this result: reason}; a hand-edited file that drops
    or garbles it must not pass as a whole result."""
    failed = read.optional_mapping(data, "failed_queries") or {}
    out: dict[str, dict[str, str]] = {}
    for leg, per_leg in failed.items():
        where = f"failed_queries.{leg}"
        read.object(per_leg, where)
        for query_id, reason in per_leg.items():
            if query_id not in query_ids:
                raise read.error(f"{where}: query {query_id!r} is not in queries")
            if not isinstance(reason, str):
                raise read.error(f"{where}.{query_id} is not a string")
        out[str(leg)] = dict(per_leg)
    return out


def load_result(path: str | Path) -> BenchmarkResult:
    """A result file (`eval --json`), validated: `BenchmarkResult.load`."""
    return BenchmarkResult.load(path)


def load_results(paths: Sequence[str | Path]) -> list[tuple[str, BenchmarkResult]]:
    """Load result files and label each by its system; a label used twice gets its file name."""
    results = [BenchmarkResult.load(path) for path in paths]
    labels = [result.label for result in results]
    out = []
    for path, label, result in zip(paths, labels, results, strict=True):
        if labels.count(label) > 1:
            label = f"{label} [{Path(path).name}]"
        out.append((label, result))
    return out

