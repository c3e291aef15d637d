"""The result document (schema recall-kit/result/1): building its manifest, saving, loading, reporting."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recall_kit.errors import ResultFileError
from recall_kit.fileio import write_json_atomic
from recall_kit.options import options_to_dict
from recall_kit.types import Report, ReportTable

if TYPE_CHECKING:
    from recall_kit.system import System

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


def _format(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return value


class BenchmarkResult:
    """One system's result on one dataset. A thin view over the JSON document, so a result loaded
    from disk behaves exactly like a fresh one."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data

    @property
    def label(self) -> str:
        return str(self.data["system"].get("label") or self.data["system"]["spec"])

    @property
    def metric_names(self) -> list[str]:
        return list(self.data["metrics"]["names"])

    @property
    def overall(self) -> dict[str, float]:
        return dict(self.data["metrics"]["overall"])

    def per_query(self, metric: str) -> dict[str, float]:
        """query_id -> value of `metric` for every query."""
        return {q["query_id"]: q["metrics"][metric] for q in self.data["queries"]}

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.data)

    @classmethod
    def load(cls, path: str | Path) -> BenchmarkResult:
        source = Path(path)
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ResultFileError(f"{source}: no such result file.") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ResultFileError(f"{source}: not a JSON result file ({error}).") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else None
            raise ResultFileError(f"{source}: expected schema {SCHEMA!r}, found {found!r}.")
        return cls(data)

    def metrics_table(self) -> ReportTable:
        names = self.metric_names
        metrics = self.data["metrics"]
        rows = [["overall", metrics["overall"]["n"], *(_format(metrics["overall"][m]) for m in names)]]
        for stratum, values in metrics["strata"].items():
            rows.append([stratum, values["n"], *(_format(values[m]) for m in names)])
        return ReportTable(title=f"{self.label} on {self.data['dataset']['name']}",
                           headers=["stratum", "n", *names], rows=rows)

    def cost_table(self) -> ReportTable:
        latency = self.data["latency_ms"]
        index = self.data["index"]
        rows = []
        for name, leg in index["legs"].items():
            leg_latency = latency["legs"].get(name, {})
            rows.append([name, _format(leg_latency.get("p50", 0.0)), _format(leg_latency.get("p95", 0.0)),
                         _format(leg_latency.get("p99", 0.0)), _format(leg["build_seconds"]),
                         leg["size_bytes"] if leg["size_bytes"] is not None else "n/a"])
        if len(index["legs"]) > 1:
            rows.append(["system", _format(latency["p50"]), _format(latency["p95"]), _format(latency["p99"]),
                         _format(index["build_seconds"]),
                         index["size_bytes"] if index["size_bytes"] is not None else "n/a"])
        qps = self.data["throughput"]["queries_per_second"]
        return ReportTable(
            title="Cost",
            headers=["leg", "p50 ms", "p95 ms", "p99 ms", "build s", "index bytes"],
            rows=rows,
            notes=[f"single-query latency over {latency['n']} queries; batch throughput {qps} queries/s"],
        )

    def attribution_table(self) -> ReportTable | None:
        attribution = self.data.get("attribution") or {}
        if len(attribution) < 2:
            return None
        rows = [[name, v["relevant_in_top_k"], v["relevant_only_this_leg"], v["relevant_pushed_out"],
                 v["unique_in_top_k"]] for name, v in attribution.items()]
        k = self.data["k"]
        return ReportTable(
            title="What each leg contributed",
            headers=["leg", f"relevant in top {k}", "relevant only it found", "relevant pushed out",
                     f"its own ids in top {k}"],
            rows=rows,
            notes=[f"pushed out: relevant ids in the leg's own top {k} that the fused top {k} lost"],
        )

    def report(self) -> Report:
        tables = [self.metrics_table(), self.cost_table()]
        attribution = self.attribution_table()
        if attribution is not None:
            tables.append(attribution)
        return Report(title=f"recall-kit eval: {self.label}", tables=tables,
                      notes=list(self.data.get("warnings", [])), data=self.data,
                      charts=self._charts())

    def _charts(self) -> list[dict[str, Any]]:
        metrics = self.data["metrics"]
        bars = {stratum: {m: values[m] for m in self.metric_names}
                for stratum, values in [("overall", metrics["overall"]), *metrics["strata"].items()]}
        latencies = [q["latency_ms"] for q in self.data["queries"] if "latency_ms" in q]
        return [
            {"kind": "bar", "title": "Metrics per stratum", "groups": bars},
            {"kind": "histogram", "title": "Single-query latency (ms)", "values": latencies},
        ]

    def summary(self) -> str:
        """The overall and per-stratum metrics as a plain-text table."""
        from recall_kit.default_plugins.reporters import format_table

        return format_table(self.metrics_table(), "simple")
