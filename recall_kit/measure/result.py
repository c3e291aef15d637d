"""The result document (schema recall-kit/result/1): building its manifest, saving, loading, reporting."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import ResultFileError, UnknownNameError
from recall_kit.fileio import is_special_file, write_json_atomic
from recall_kit.options import options_to_dict
from recall_kit.types import Hit, Report, ReportTable

if TYPE_CHECKING:
    from recall_kit.measure.system import System

SCHEMA = "recall-kit/result/1"


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_manifest(system: System, seed: int) -> dict[str, Any]:
    """Versions, platform and time: what is needed to reproduce (or distrust) a result."""
    plugins = {}
    for leg in system.legs:
        plugins[leg.plugin] = _version(leg.plugin)
    return {
        "recall_kit": _version("recall-kit"),
        "plugins": plugins,
        "context": {leg.name: options_to_dict(leg.context) for leg in system.legs if leg.context},
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "seed": seed,
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def system_settings(system: dict[str, Any]) -> str:
    """A result's system as one line: each leg's weight and options, then each fusion's options."""
    parts = []
    for leg in system.get("legs") or []:
        if not isinstance(leg, dict):
            continue
        options = leg.get("options")
        settings = ", ".join(f"{key}={value}" for key, value in options.items()) if isinstance(options, dict) else ""
        parts.append(f"{leg.get('name')} (weight {leg.get('weight', 1)}{'; ' + settings if settings else ''})")
    for fusion in system.get("fusion") or []:
        if isinstance(fusion, dict):
            options = fusion.get("options")
            settings = ", ".join(f"{key}={value}" for key, value in options.items()) if isinstance(options, dict) else ""
            parts.append(f"fusion {fusion.get('name')}{' (' + settings + ')' if settings else ''}")
    return "; ".join(parts) or "?"


def _format(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return value


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

    #: The system section: spec, label, legs (name, plugin, weight, options), fusion chain.
    system: dict[str, Any]
    #: The dataset section: name, path, fingerprint, counts.
    dataset: dict[str, Any]
    k: int
    depth: int
    metric_names: list[str]
    #: Metric name -> mean over every query, plus "n".
    overall: dict[str, float]
    #: Stratum -> (metric name -> mean over the stratum's queries, plus "n").
    strata: dict[str, dict[str, float]]
    queries: list[QueryResult]
    attribution: dict[str, dict[str, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: p50/p95/p99/mean/max/n of the system's single-query latency in ms, and "legs": the same per leg.
    latency: dict[str, Any] = field(default_factory=dict)
    #: build_seconds, size_bytes and "legs": per-leg build cost and index stats.
    index: dict[str, Any] = field(default_factory=dict)
    throughput: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    manifest: dict[str, Any] = field(default_factory=dict)
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

    # -- reading ---------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        return str(self.system.get("label") or self.system.get("spec"))

    @property
    def fingerprint(self) -> str | None:
        value = self.dataset.get("fingerprint")
        return None if value is None else str(value)

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

    def stratum_of(self) -> dict[str, str]:
        """query_id -> stratum."""
        return {query.query_id: query.stratum for query in self.queries}

    def per_query(self, metric: str) -> dict[str, float]:
        """query_id -> value of `metric` for every query."""
        return {query.query_id: query.metrics[metric] for query in self.queries}

    def rankings(self) -> dict[str, list[str]]:
        """query_id -> ranked document ids."""
        return {query.query_id: query.ranking for query in self.queries}

    def latencies(self) -> list[float]:
        """The sampled single-query latencies in ms, in query order."""
        return [query.latency_ms for query in self.queries if query.latency_ms is not None]

    def provenance(self) -> list[tuple[str, str]]:
        """What this result measured, for a report's header: dataset, fingerprint, the versions and
        platform it ran on, when, and the system's options."""
        name = self.dataset.get("name") or Path(str(self.dataset.get("path") or "?")).name
        rows = [("dataset", f"{name} ({self.dataset.get('memories', '?')} memories, {len(self.queries)} queries), "
                            f"fingerprint {(self.fingerprint or '?')[:12]}")]
        manifest = self.manifest
        plugins = manifest.get("plugins")
        versions = ", ".join([f"recall-kit {manifest.get('recall_kit') or '?'}",
                              *(f"{name} {version or '?'}" for name, version in
                                (plugins.items() if isinstance(plugins, dict) else []))])
        rows.append(("software", f"{versions}; Python {manifest.get('python', '?')} on {manifest.get('platform', '?')}"))
        rows.append(("run at", f"{manifest.get('time', '?')} (seed {manifest.get('seed', '?')}, k {self.k})"))
        rows.append((f"system {self.label}", system_settings(self.system)))
        return rows

    # -- writing ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "system": self.system,
            "dataset": self.dataset,
            "k": self.k,
            "k_requested": self.k if self.k_requested is None else self.k_requested,
            "depth": self.depth,
            "metrics": {"names": self.metric_names, "relevance_level": self.relevance_level,
                        "judged_only": self.judged_only, "overall": self.overall, "strata": self.strata},
            "attribution": self.attribution,
            "attribution_depth": self.k if self.attribution_depth is None else self.attribution_depth,
            "empty_rankings": self.empty_rankings,
            "warnings": self.warnings,
            "queries": [query.to_dict() for query in self.queries],
            "latency_ms": self.latency,
            "index": self.index,
            "throughput": self.throughput,
            "wall_seconds": self.wall_seconds,
            "manifest": self.manifest,
        }

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_dict())

    def write_run(self, path: str | Path, tag: str | None = None) -> None:
        """The rankings as a TREC run file (`qid Q0 docid rank score tag`), tagged with the spec."""
        from recall_kit.measure.trec import write_run

        write_run(path, {query.query_id: query.hits() for query in self.queries},
                  tag=tag or str(self.system.get("spec") or "recall-kit"))

    # -- loading ---------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> BenchmarkResult:
        source = Path(path)
        if is_special_file(source):  # a named pipe would block for ever
            raise ResultFileError(f"{source}: not a regular file (a named pipe or a device).")
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
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
        read = _Reader(source)
        metrics = read.mapping(data, "metrics")
        names = read.strings(metrics, "names", "metrics.names")
        bounds = _metric_bounds(names)
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
            values = read.mapping(entry, "metrics", f"{where}.metrics")
            for name in names:
                _check_share(read, name, read.number(values, name, f"{where}.metrics.{name}"),
                             f"{where} (query {query_id!r})", bounds[name])
            ranking = read.strings(entry, "ranking", f"{where}.ranking")
            scores = [float(s) for s in read.sequence(entry, "scores", f"{where}.scores")]
            if len(scores) != len(ranking):
                raise read.error(f"{where}: {len(ranking)} ranked ids but {len(scores)} scores")
            latency = entry.get("latency_ms")
            if latency is not None:
                latency = _non_negative(read, read.number(entry, "latency_ms", f"{where}.latency_ms"),
                                        f"{where}.latency_ms")
            queries.append(QueryResult(
                query_id=query_id,
                stratum=read.string(entry, "stratum", f"{where}.stratum"),
                ranking=ranking,
                scores=scores,
                metrics={name: float(value) for name, value in values.items()},
                found_by=dict(entry.get("found_by") or {}),
                scope=None if entry.get("scope") is None else str(entry["scope"]),
                latency_ms=None if latency is None else float(latency),
            ))
        latency_summary = data.get("latency_ms") or {}
        if not isinstance(latency_summary, dict):
            raise read.error("latency_ms is not an object")
        for stat in ("p50", "p95", "p99", "mean", "max", "n"):  # a NaN or negative latency passed `gate`
            if stat in latency_summary:
                _non_negative(read, read.number(latency_summary, stat, f"latency_ms.{stat}"), f"latency_ms.{stat}")
        overall = read.mapping(metrics, "overall", "metrics.overall")
        strata = read.mapping(metrics, "strata", "metrics.strata")
        for name in names:
            _check_share(read, name, read.number(overall, name, f"metrics.overall.{name}"), "metrics.overall",
                         bounds[name])
        return cls(
            system=read.mapping(data, "system"),
            dataset=read.mapping(data, "dataset"),
            k=int(read.number(data, "k")),
            depth=int(read.number(data, "depth" if "depth" in data else "k")),
            metric_names=names,
            overall=dict(overall),
            strata={str(s): dict(v) for s, v in strata.items()},
            queries=queries,
            attribution=dict(data.get("attribution") or {}),
            warnings=[str(w) for w in data.get("warnings") or []],
            latency=dict(data.get("latency_ms") or {}),
            index=dict(data.get("index") or {}),
            throughput=dict(data.get("throughput") or {}),
            wall_seconds=float(data.get("wall_seconds") or 0.0),
            manifest=dict(data.get("manifest") or {}),
            relevance_level=int(read.number(metrics, "relevance_level", "metrics.relevance_level"))
            if "relevance_level" in metrics else 1,
            judged_only=bool(metrics.get("judged_only", False)),
            k_requested=None if data.get("k_requested") is None else int(data["k_requested"]),
            attribution_depth=None if data.get("attribution_depth") is None else int(data["attribution_depth"]),
            empty_rankings={str(leg): int(n) for leg, n in (data.get("empty_rankings") or {}).items()},
        )

    def scoring_notes(self) -> list[str]:
        """What a reader must know about how relevance was scored, when it is not the default."""
        notes = []
        if self.relevance_level != 1:
            notes.append(f"relevant: grade >= {self.relevance_level} (trec_eval -l)")
        if self.judged_only:
            notes.append("judged only: unjudged ids were dropped from each ranking (trec_eval -J)")
        return notes

    def metrics_table(self) -> ReportTable:
        names = self.metric_names
        rows = [["overall", self.overall["n"], *(_format(self.overall[m]) for m in names)]]
        for stratum, values in self.strata.items():
            rows.append([stratum, values["n"], *(_format(values[m]) for m in names)])
        whole = [name for name in names if "@" not in name]
        notes = []
        if whole:
            # A metric without a cutoff reads the whole ranking, and the ranking is the top k.
            notes.append(f"{', '.join(whole)}: computed over the top {self.k} (the scored depth k).")
        notes += self.scoring_notes()
        return ReportTable(title=f"{self.label} on {self.dataset.get('name')}",
                           headers=["stratum", "n", *names], rows=rows, notes=notes)

    def per_query_table(self) -> ReportTable:
        """Each query's metric values, in the result's query order (trec_eval ``-q``)."""
        names = self.metric_names
        rows = [[query.query_id, query.stratum, *(_format(query.metrics[m]) for m in names)]
                for query in self.queries]
        return ReportTable(title=f"{self.label}: per query", headers=["query", "stratum", *names], rows=rows)

    def cost_table(self) -> ReportTable:
        latency = self.latency
        index = self.index
        rows = []
        def milliseconds(stats: dict[str, Any]) -> list[Any]:
            # With --latency-sample 0 nothing was timed: say so rather than print 0.0000 ms.
            if not stats.get("n"):
                return ["not measured"] * 3
            return [_format(stats.get(key, 0.0)) for key in ("p50", "p95", "p99")]

        for name, leg in index["legs"].items():
            rows.append([name, *milliseconds(latency["legs"].get(name, {})), _format(leg["build_seconds"]),
                         leg["size_bytes"] if leg["size_bytes"] is not None else "n/a"])
        if len(index["legs"]) > 1:
            rows.append(["system", *milliseconds(latency), _format(index["build_seconds"]),
                         index["size_bytes"] if index["size_bytes"] is not None else "n/a"])
        qps = self.throughput.get("queries_per_second")
        timed = (f"single-query latency over {latency['n']} queries" if latency.get("n")
                 else "single-query latency not measured (--latency-sample 0)")
        notes = [f"{timed}; batch throughput {qps} queries/s"]
        for name, stats in latency.get("legs", {}).items():
            if stats.get("wait", {}).get("n"):  # a leg that waits on an outside system
                notes.append(f"{name}: p50 {_format(stats['wait']['p50'])} ms waiting on the system it calls, "
                             f"{_format(stats['overhead']['p50'])} ms client overhead")
        return ReportTable(
            title="Cost",
            headers=["leg", "p50 ms", "p95 ms", "p99 ms", "build s", "index bytes"],
            rows=rows,
            notes=notes,
        )

    def attribution_table(self) -> ReportTable | None:
        attribution = self.attribution
        if len(attribution) < 2:
            return None
        rows = [[name, v["relevant_in_top_k"], v["relevant_only_this_leg"], v["relevant_pushed_out"],
                 v["unique_in_top_k"]] for name, v in attribution.items()]
        k = self.k if self.attribution_depth is None else self.attribution_depth
        return ReportTable(
            title=f"What each leg contributed (measured at depth {k})",
            headers=["leg", f"relevant in top {k}", "relevant only it found", "relevant pushed out",
                     f"its own ids in top {k}"],
            rows=rows,
            notes=[f"a leg found a document when it ranked it in its own top {k}; "
                   f"pushed out: relevant ids in the leg's own top {k} that the fused top {k} lost"],
        )

    def report(self, per_query: bool = False) -> Report:
        """The eval report: metrics per stratum, costs, leg attribution; with `per_query`, also
        each query's values (trec_eval ``-q``)."""
        tables = [self.metrics_table(), self.cost_table()]
        attribution = self.attribution_table()
        if attribution is not None:
            tables.append(attribution)
        if per_query:
            tables.append(self.per_query_table())
        return Report(title=f"recall-kit eval: {self.label}", tables=tables,
                      notes=list(self.warnings), data=self.to_dict(),
                      charts=self._charts())

    def _charts(self) -> list[dict[str, Any]]:
        bars = {stratum: {m: values[m] for m in self.metric_names}
                for stratum, values in [("overall", self.overall), *self.strata.items()]}
        latencies = self.latencies()
        return [
            {"kind": "bar", "title": "Metrics per stratum", "groups": bars},
            {"kind": "histogram", "title": "Single-query latency (ms)", "values": latencies},
        ]

    def summary(self) -> str:
        """The overall and per-stratum metrics as a plain-text table."""
        from recall_kit.reporting.formats import format_table

        return format_table(self.metrics_table(), "simple")


def _metric_bounds(names: Sequence[str]) -> dict[str, tuple[float, float] | None]:
    """Each metric name's bounds (`Metric.bounds` of its registered family); None for a metric
    not registered here (a plugin's, not installed) or declared unbounded."""
    from recall_kit import registry

    entries = registry.metrics.all()
    families = {name: name.split("@", 1)[0] for name in names}
    return {name: entries[family].obj.bounds if family in entries else None for name, family in families.items()}


def _check_share(read: _Reader, name: str, value: float, where: str,
                 bounds: tuple[float, float] | None) -> None:
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise read.error(f"{where}: metric {name!r} is {value}, outside [{bounds[0]:g}, {bounds[1]:g}]")


def _non_negative(read: _Reader, value: float, where: str) -> float:
    if value < 0:
        raise read.error(f"{where} is {value}, below 0")
    return value


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


def check_comparable(named: Sequence[tuple[str, BenchmarkResult]]) -> list[str]:
    """Refuse results of different datasets or query sets; return the shared query ids in order."""
    if len(named) < 2:
        raise ResultFileError("Compare needs at least two result files.")
    base_label, base = named[0]
    base_fp = str(base.fingerprint)
    base_ids = base.query_ids
    for label, result in named[1:]:
        fp = str(result.fingerprint)
        if fp != base_fp:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were run on different datasets (fingerprints "
                f"{fp[:12]} and {base_fp[:12]}); compare results of one dataset."
            )
        ids = set(result.query_ids)
        if ids != set(base_ids):
            only_here, only_base = len(ids - set(base_ids)), len(set(base_ids) - ids)
            raise ResultFileError(
                f"{label!r} and {base_label!r} hold different query sets ({only_here} queries only in "
                f"the first, {only_base} only in the second); compare results of one query set."
            )
    return base_ids


def check_scored_alike(named: Sequence[tuple[str, BenchmarkResult]]) -> None:
    """Refuse results scored with different relevance levels (trec_eval ``-l``) or judged-only
    settings (``-J``): their per-query values measure different things, so no delta between them
    says anything about the systems."""
    base_label, base = named[0]
    for label, result in named[1:]:
        if result.relevance_level != base.relevance_level:
            raise ResultFileError(
                f"{label!r} and {base_label!r} were scored with different relevance levels (-l "
                f"{result.relevance_level} and -l {base.relevance_level}); compare results scored alike "
                "(re-run eval with one -l)."
            )
        if result.judged_only != base.judged_only:
            scored, other = (label, base_label) if result.judged_only else (base_label, label)
            raise ResultFileError(
                f"{scored!r} was scored judged-only (-J) and {other!r} was not; compare results scored "
                "alike (re-run eval with or without -J for both)."
            )


class _Reader:
    """Typed field access for `from_dict`, each failure one line naming the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, what: str) -> ResultFileError:
        return ResultFileError(f"{self.source}: {what}; not a valid {SCHEMA} document.")

    def _get(self, data: dict[str, Any], key: str, where: str | None) -> Any:
        if key not in data:
            raise self.error(f"missing {where or key!r}")
        return data[key]

    def mapping(self, data: dict[str, Any], key: str, where: str | None = None) -> dict[str, Any]:
        value = self._get(data, key, where)
        if not isinstance(value, dict):
            raise self.error(f"{where or key} is not an object")
        return value

    def sequence(self, data: dict[str, Any], key: str, where: str | None = None) -> list[Any]:
        value = self._get(data, key, where)
        if not isinstance(value, list):
            raise self.error(f"{where or key} is not a list")
        return value

    def string(self, data: dict[str, Any], key: str, where: str | None = None) -> str:
        value = self._get(data, key, where)
        if not isinstance(value, str):
            raise self.error(f"{where or key} is not a string")
        return value

    def strings(self, data: dict[str, Any], key: str, where: str | None = None) -> list[str]:
        values = self.sequence(data, key, where)
        if not all(isinstance(value, str) for value in values):
            raise self.error(f"{where or key} holds a non-string")
        return values

    def number(self, data: dict[str, Any], key: str, where: str | None = None) -> float:
        value = self._get(data, key, where)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(f"{where or key} is {value!r}, not a finite number")
        return float(value)
