"""The whole study file checked before any step: every name looked up, every value in range, in
study.toml's words (`[study] decision_metrics`, `[sweep] grid`), never the command line's."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from recall_kit.decide.stats import MAX_RESAMPLES
from recall_kit.errors import DatasetError, RecallKitError, SpecError
from recall_kit.study.config import StudyConfig, load_study, shown_path, study_file

if TYPE_CHECKING:
    from recall_kit.study.result import CorpusSummary

_T = TypeVar("_T")

#: A system's name names its step folders (`run/NAME`, `.NAME.partialPID-old`): kept well under the
#: 255 bytes a file name may have.
MAX_NAME_LENGTH = 100
#: The hook's k and the pool's depth: how many memories a product reads, how deep each system's
#: ranking is judged. Past this the pool is the corpus and the hook is no hook.
MAX_DEPTH = 1000


def _fail(config: StudyConfig, what: str) -> SpecError:
    return SpecError(f"{shown_path(config.source)}: {what}")


def check_study_file(path: str | Path) -> StudyConfig:
    """Read `path` and check all of it (shapes, names, ranges, every system built); the first
    mistake is one `SpecError` naming the file and the key. Nothing is run or written."""
    path = study_file(path)
    check_shapes(path)
    config = load_study(path)
    check_study(config)
    return config


def check_shapes(path: Path) -> None:
    """Values `load_study` takes for granted, checked in the file's words: `systems = 5` is not an
    array of tables, a file path is text."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return  # load_study says what is wrong with the file itself
    source = shown_path(path)
    systems = data.get("systems")
    if systems is not None and not isinstance(systems, list):
        raise SpecError(f"{source}: systems must be an array of tables ([[systems]] name = ... retriever = ...), "
                        f"got {_short(systems)}.")
    for table, key in (("evaluation_set", "queries"), ("evaluation_set", "qrels"), ("judging", "agreement"),
                       ("production", "substrate"), ("production", "embedding_model")):
        section = data.get(table)
        if isinstance(section, dict) and key in section and not isinstance(section[key], str):
            raise SpecError(f"{source}: [{table}] {key} must be text, got {_short(section[key])}.")


def _short(value: Any) -> str:
    """A value as a mistake shows it: itself when short, else its type."""
    return repr(value) if len(repr(value)) <= 40 else f"a {type(value).__name__}"


def check_study(config: StudyConfig, only: list[str] | None = None) -> None:
    """Every check that needs the registries: metrics, systems (`only` these, when given), the
    sweep's grid, the judge, the generators, production's names; and the ranges a study runs with."""
    for system in config.systems:
        if len(system.name) > MAX_NAME_LENGTH:
            raise _fail(config, f"[[systems]] name {system.name[:20]!r}... is {len(system.name)} characters long: "
                                f"at most {MAX_NAME_LENGTH} (it names the system's folders).")
    for key, value in (("[study] hook_k", config.hook_k), ("[judging] pool_depth", config.pool_depth)):
        if value > MAX_DEPTH:
            raise _fail(config, f"{key} = {value} is past any ranking a study judges: at most {MAX_DEPTH}.")
    if config.resamples > MAX_RESAMPLES:
        raise _fail(config, f"[study] resamples = {config.resamples:,} is more than a p-value needs: at most "
                            f"{MAX_RESAMPLES:,} (the default is 2,000).")
    from recall_kit.study.people import check_people_count, people_files

    check_people_count(people_files(config), f"{shown_path(config.source)}: [judging] people")
    _check_metrics(config)
    check_systems(config, only)
    _check_sweep(config, build=only is None or config.sweep_system in only)
    _check_registered(config)
    _check_production(config)


def check_systems(config: StudyConfig, only: list[str] | None = None) -> None:
    """Every system's names and options looked up before any step runs: a typo fails in a second,
    naming the system, not after the other systems' runs."""
    from recall_kit.measure.systems.system import build_system

    for system in config.systems:
        if only is not None and system.name not in only:
            continue
        try:
            build_system(system.spec())
        except RecallKitError as error:
            raise SpecError(f"{shown_path(config.source)}: system {system.name!r}: {error}") from None


def _reworded(config: StudyConfig, key: str, check: Callable[[], _T], flag: str = "") -> _T:
    """`check()`, its error said in study.toml's words: `key` first, the flag it names replaced."""
    try:
        return check()
    except RecallKitError as error:
        text = str(error)
        if flag:  # "Bad --grid 'x': ..." or "--grid names 'x' twice." -> "[sweep] grid: ..."
            text = text.removeprefix(f"Bad {flag} ").removeprefix(f"{flag} ").replace(flag, key)
        raise _fail(config, f"{key}: {text}") from None


def _check_metrics(config: StudyConfig) -> None:
    """Each metric names one metric, as the results name it (`recall` is nine, `nDCG@10` is
    written `ndcg@10`); a decision metric measures retrieval (not a diagnostic such as judged@k)."""
    from recall_kit.decide.compare import is_diagnostic
    from recall_kit.measure.score.metric_names import resolve_metrics

    lists = (("[study] decision_metrics", config.decision_metrics),
             ("[study] exploratory_metrics", config.exploratory_metrics),
             ("[sweep] guards", config.sweep_guards), ("[sweep] target", [config.sweep_target]))
    for key, names in lists:
        for name in names:
            specs = _reworded(config, key, partial(resolve_metrics, [name]))
            if len(specs) > 1:
                raise _fail(config, f"{key}: {name!r} names {len(specs)} metrics ({', '.join(s.name for s in specs)}): "
                                    f"name one, e.g. {specs[0].name!r}.")
            if specs[0].name != name:
                raise _fail(config, f"{key}: write {name!r} as {specs[0].name!r} (the name results use).")
    from recall_kit.decide.holes import cutoff_problem

    for name in config.decision_metrics:
        if is_diagnostic(name):
            raise _fail(config, f"[study] decision_metrics: {name!r} is a diagnostic (how much of the ranking is "
                                "judged), not a measure of retrieval: it cannot decide.")
        problem = cutoff_problem(name)
        if problem:
            raise _fail(config, f"[study] decision_metrics: {problem}; a smaller [study] hook_k (the default "
                                "metrics' k) or decision_metrics with a smaller k.")


def _check_sweep(config: StudyConfig, build: bool = True) -> None:
    """The grid's axes against the swept system, and (with `build`: the system is one being
    checked) each value built into it (`bm25.k1=abc` fails here, not at the sweep step); a grid
    without a system is refused, not ignored."""
    if config.sweep_grid and not config.sweep_system:
        raise _fail(config, "[sweep] grid is given but [sweep] system is not: name the system to sweep "
                            "(one of the [[systems]]), or remove the grid.")
    if not config.sweep_system or not config.sweep_grid:
        return
    from dataclasses import replace

    from recall_kit.decide.sweep import grid_specs, parse_grid
    from recall_kit.measure.systems.system import build_system

    spec = config.system(config.sweep_system).spec()
    axes = _reworded(config, "[sweep] grid", lambda: parse_grid(config.sweep_grid, spec), flag="--grid")
    for axis in axes if build else ():
        for value in axis.values:
            _, variant = grid_specs(spec, [replace(axis, values=(value,))])[0]
            _reworded(config, f"[sweep] grid {axis.name}={value}", partial(build_system, variant))


def _check_registered(config: StudyConfig) -> None:
    """The judge and the query generators: registered, their options known."""
    import recall_kit.registry as registry

    if config.judge != "qrels":
        _reworded(config, f"[judging] judge = {config.judge!r}",
                  lambda: registry.judges.build_options(config.judge, config.judge_options))
    if config.exact or config.exact_options:
        _reworded(config, "[evaluation_set] exact_options",
                  lambda: registry.generators.build_options("exact", config.exact_options))
    for name in config.generate:
        options = config.generate_options.get(name)
        _reworded(config, f"[evaluation_set] generate.{name}",
                  partial(registry.generators.build_options, name, options))


def _check_production(config: StudyConfig) -> None:
    """`[production] substrate` names a retriever, `priors` fusions (what the threats compare with)."""
    import recall_kit.registry as registry

    production: Mapping[str, Any] = config.production
    substrate = production.get("substrate")
    if substrate:
        _reworded(config, f"[production] substrate = {substrate!r}", lambda: registry.retrievers.get(substrate))
    priors = production.get("priors")
    if priors is None:
        return
    if not isinstance(priors, list) or not all(isinstance(prior, str) for prior in priors):
        raise _fail(config, f"[production] priors must be a list of fusion names ([] for none), got {priors!r}.")
    for prior in priors:
        _reworded(config, f"[production] priors: {prior!r}", partial(registry.fusions.get, prior))


def check_generated(study_file: str, requested: Mapping[str, int], written: Mapping[str, int], *,
                    memories: int) -> None:
    """Refuse a request no corpus of this size could meet (more queries than memories: `exact =
    1000000` on 337 memories gave 333). A request within range that the generator met only in part
    is said, not refused: the evaluation set's stratum reads "asked N, generated M"."""
    for name, count in requested.items():
        if count > memories and written.get(name, 0) < count:
            key = "[evaluation_set] exact" if name == "exact" else f"[evaluation_set] generate.{name}"
            raise SpecError(f"{study_file}: {key} = {count}: the corpus yields only {written.get(name, 0)} such queries "
                                f"({memories} memories); ask for at most {written.get(name, 0)}.")


def check_copied_queries(folder: Path, copies: Mapping[str, Path]) -> None:
    """The user's queries and qrels, just copied into `folder` verbatim, checked row by row with
    their problems named in the user's files (`q.jsonl:7`, not the copy's `queries.jsonl:7`).
    Only each file's own rows: what they say of the corpus is the evaluation set's load to check."""
    from recall_kit.dataset import (
        QUERIES_FILE,
        Problem,
        read_qrels_jsonl,
        read_queries,  # the loader's own row checks
    )
    from recall_kit.errors import DatasetError

    problems: list[Problem] = []
    read_queries(folder, problems)
    if problems:
        first = problems[0]
        where = copies.get(QUERIES_FILE, Path(first.file))
        raise DatasetError(f"{where}:{first.line}: {first.message}" if first.line else f"{where}: {first.message}")
    if "qrels.jsonl" in copies:
        read_qrels_jsonl(copies["qrels.jsonl"])  # names the user's file and line


def check_corpus_rows(source: Path) -> int:
    """The store's corpus file checked row by row where the user wrote it (`c.jsonl:51`): the
    study's corpus.jsonl is a copy, its lines shifted by the sensitive rows it leaves out. Returns
    how many rows are not flagged sensitive (what `study init` reports), from the same one read."""
    from recall_kit.dataset import Problem, as_id, read_jsonl, sensitive_flag
    from recall_kit.dataset import parse_memory as parse_memory_row  # the loader's own row check

    seen: dict[str, int] = {}
    kept = 0
    for number, row in read_jsonl(source):
        flag = sensitive_flag(row.get("is_sensitive"))
        kept += flag is not True
        if flag is not False:
            continue  # never read further (an unreadable flag is the sensitive rule's to refuse)
        problems: list[Problem] = []
        memory = parse_memory_row(number, row, problems)
        if problems:
            raise DatasetError(f"{shown_path(source)}:{number}: {problems[0].message}")
        memory_id = as_id(row.get("id"))
        if memory is not None and memory_id is not None:
            if memory_id in seen:
                raise DatasetError(f"{shown_path(source)}:{number}: duplicate id {memory_id} (first on line {seen[memory_id]})")
            seen[memory_id] = number
    return kept


def check_init_choices(baseline: str, hook_k: int, recipe: dict[str, Any]) -> None:
    """`study init`'s own flags, in its words: the baseline names a folder and a registered
    retriever, the hook's k is one a study runs with."""
    import re

    from recall_kit.errors import OptionError
    from recall_kit.measure.systems.system import SystemSpec, build_system

    if not 1 <= hook_k <= MAX_DEPTH:
        raise OptionError(f"--hook-k must lie between 1 and {MAX_DEPTH}, got {hook_k}.")
    if len(baseline) > MAX_NAME_LENGTH or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", baseline):
        raise OptionError(f"--baseline {baseline[:40]!r}: name one system (letters, digits, '.', '_', '-'; "
                          f"at most {MAX_NAME_LENGTH} characters), e.g. fts5 or hybrid.")
    try:
        build_system(SystemSpec(retriever=recipe["retriever"], fusions=[recipe["fusion"]] if "fusion" in recipe else [],
                                weights=recipe.get("weights", {})))
    except RecallKitError as error:
        raise OptionError(f"--baseline {baseline!r}: {error}") from None


def write_checked_study(target: Path, text: str, baseline: str) -> None:
    """Write `text` (a study file `study init` made) at `target` only once `study run`'s check
    accepts it. Checked as a file of the same name in a temporary folder (no check reads the
    store's path); the candidates it proposes beside the baseline may need plugins not installed
    yet, so only the baseline is built."""
    import tempfile

    from recall_kit.fileio import write_text_atomic

    with tempfile.TemporaryDirectory(prefix="recall-kit-init-") as folder:
        trial = (Path(folder) / target.name).resolve()
        trial.write_text(text, encoding="utf-8")
        try:
            check_shapes(trial)
            check_study(load_study(trial), only=[baseline])
        except SpecError as error:
            raise SpecError(str(error).replace(str(trial), str(target))) from None
    write_text_atomic(target, text, follow_links=False)  # a link at `target` is replaced, not written through


def no_memories(path: Path, summary: CorpusSummary) -> DatasetError:
    """A store that holds no memories a study may read, said with the rows it left out and why."""
    said = summary.left_out_words() or (f"its {summary.sensitive_dropped} rows are sensitive"
                                        if summary.sensitive_dropped else "")
    return DatasetError(f"{shown_path(path)}: holds no memories that may be studied" + (f" ({said})." if said else "."))


def rows_left_out(counts: dict[str, Any]) -> dict[str, int]:
    """The rows an SQLite store's read left out other than the sensitive ones, by reason, as the
    study says them (`SqliteImporter.read_memories`'s counts)."""
    dropped = counts.get("dropped", {})
    return {words: int(dropped[key]) for key, words in (("rows_missing_id", "no readable id"), ("rows_missing_text", "no text"))
            if dropped.get(key)}
