"""A fuzz target for each reader of a file or an answer another person or program writes: TREC run
and qrels files, a dataset's JSONL, the study file, an assessor's labels file, a study folder's
manifest, a pool file, a recipe (system TOML), an HTTP answer and an MCP tool answer.

Each target builds valid inputs from a model (the reference reading) and writes them in the
spellings the format allows (separators, comments, blank lines, key order, ids as text or whole
numbers); `harness.Target.cases` adds the same inputs mutated and raw bytes. A finding of a long
run is kept as an entry of the target's `examples` (replayed on every run), with a comment saying
what it found. `python tests/fuzz/run.py` (`make fuzz`) runs each for FUZZ_SECONDS."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

try:  # as a package (tests/ on sys.path: the test suite) or beside run.py (`make fuzz`)
    from fuzz.harness import Case, Target, unknown, valid
except ImportError:  # pragma: no cover
    from harness import Case, Target, unknown, valid  # type: ignore[no-redef]

from recall_kit.dataset import as_id

# -- the pieces the formats share ------------------------------------------------------------------

#: Text on one line without control characters (TOML and the id rules refuse those).
PLAIN = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Co", "Cn", "Zl", "Zp"))
#: Ids as TREC files write them: no whitespace, not a comment.
TREC_ID = st.text(st.characters(codec="utf-8", exclude_categories=("Z", "C")), min_size=1, max_size=10).filter(
    lambda text: not text.startswith("#") and not any(c.isspace() for c in text) and "\x85" not in text)
#: Ids as JSON rows write them: printable text, or a whole number.
TEXT_ID = st.text(PLAIN, min_size=1, max_size=12).filter(lambda text: as_id(text) == text)
JSON_ID = TEXT_ID | st.integers(-(10**12), 10**12)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
SEPARATOR = st.sampled_from([" ", "\t", "  ", " \t"])


def _jsonl(rows: list[Any], blank: bool = False) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + ("\n\n" if blank else "\n") for row in rows).encode("utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # nan and inf are TOML's spellings too
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string (no control characters in it)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value).__name__)


def toml(tables: Any) -> bytes:
    """A TOML document of `tables`: a table per dict, an array of tables per list of dicts, and any
    other value as a key at the top (as a hostile edit may leave one)."""
    if not isinstance(tables, dict):
        tables = {"value": tables}
    top: list[str] = []
    out: list[str] = []
    for name, body in tables.items():
        if isinstance(body, dict):
            out.append(f"[{_toml_value(str(name))}]")
            out.extend(f"{_toml_value(str(key))} = {_toml_value(value)}" for key, value in body.items())
        elif isinstance(body, list) and body and all(isinstance(table, dict) for table in body):
            for table in body:
                out.append(f"[[{_toml_value(str(name))}]]")
                out.extend(f"{_toml_value(str(key))} = {_toml_value(value)}" for key, value in table.items())
        else:
            top.append(f"{_toml_value(str(name))} = {_toml_value(body)}")
        out.append("")
    return "\n".join([*top, *out]).encode("utf-8")


# -- TREC run and qrels ----------------------------------------------------------------------------

def _trec_lines(draw: st.DrawFn, rows: list[list[str]]) -> bytes:
    lines = []
    for fields in rows:
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "   ", "#"])))
        separator = draw(SEPARATOR)
        lines.append(draw(st.sampled_from(["", " "])) + separator.join(fields))
    return ("\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))).encode("utf-8")


@st.composite
def _runs(draw: st.DrawFn) -> Case:
    from recall_kit.types import Hit, sort_hits

    pairs = draw(st.lists(st.tuples(TREC_ID, TREC_ID), unique=True, max_size=12))
    rows, hits = [], {}
    for rank, (query, doc) in enumerate(pairs):
        score = draw(FINITE | st.integers(-10**6, 10**6))
        text = draw(st.sampled_from([repr, lambda v: f"{v:.6g}", lambda v: f"{v:e}"]))(score)
        tail = draw(st.sampled_from([[], ["extra"], ["a", "b"]]))
        rows.append([query, "Q0", doc, str(rank + 1), text, "tag", *tail])
        hits.setdefault(query, []).append(Hit(doc, float(text)))
    return valid({"run.txt": _trec_lines(draw, rows)}, {query: sort_hits(found) for query, found in hits.items()})


def _read_run(root: Path) -> Any:
    from recall_kit.errors import DatasetError
    from recall_kit.measure.score.trec import read_run, read_run_table

    path = root / "run.txt"
    try:
        run = read_run(path)
    except DatasetError as refused:
        try:
            read_run_table(path)
        except DatasetError:
            raise refused from None
        # The fast reader leaves duplicates to the join (documented); nothing else may pass it.
        assert "twice" in str(refused), f"the fast reader read what the exact one refused: {refused}"
        raise
    table = read_run_table(path)
    rows = sorted(zip(table.query_ids.tolist(), table.doc_ids.tolist(), table.values.tolist(), strict=True))
    exact = sorted((query.encode(), hit.id.encode(), hit.score) for query, hits in run.items() for hit in hits)
    assert rows == exact, "the fast and the exact TREC run readers disagree"
    return run


@st.composite
def _qrels(draw: st.DrawFn) -> Case:
    pairs = draw(st.lists(st.tuples(TREC_ID, TREC_ID), unique=True, max_size=12))
    rows, qrels = [], {}
    for query, doc in pairs:
        grade = draw(st.integers(-1000, 1000))
        text = draw(st.sampled_from([str(grade), f"{grade}.0"]))
        rows.append([query, draw(st.sampled_from(["0", "Q0", "1"])), doc, text])
        qrels.setdefault(query, {})[doc] = grade
    return valid({"qrels.txt": _trec_lines(draw, rows)}, qrels)


def _read_qrels(root: Path) -> Any:
    from recall_kit.measure.score.trec import read_qrels, read_qrels_table

    path = root / "qrels.txt"
    qrels = read_qrels(path)
    table = read_qrels_table(path)
    rows = sorted(zip(table.query_ids.tolist(), table.doc_ids.tolist(), table.values.tolist(), strict=True))
    exact = sorted((query.encode(), doc.encode(), grade) for query, judged in qrels.items()
                   for doc, grade in judged.items())
    assert rows == exact, "the fast and the exact TREC qrels readers disagree"
    return qrels


# -- a dataset (corpus, queries, qrels JSONL) ------------------------------------------------------

@st.composite
def _datasets(draw: st.DrawFn) -> Case:
    memory_ids = draw(st.lists(JSON_ID, min_size=1, max_size=6, unique_by=str))
    query_ids = draw(st.lists(JSON_ID, min_size=1, max_size=4, unique_by=str))
    corpus = [{"id": memory, "content": draw(st.text(PLAIN, max_size=30))} for memory in memory_ids]
    queries = [{"query_id": query, "text": draw(st.text(PLAIN, max_size=30))} for query in query_ids]
    qrels_rows, qrels = [], {}
    for query in query_ids:
        judged = draw(st.lists(st.sampled_from(memory_ids), min_size=1, unique_by=str))
        grades = {str(doc): draw(st.integers(-1000, 1000)) for doc in judged}
        if draw(st.booleans()) and all(grade == 1 for grade in grades.values()):
            qrels_rows.append({"query_id": query, "relevant_ids": judged})
        else:
            qrels_rows.append({"query_id": query, "relevance": grades})
        qrels[str(query)] = grades
    expected = ([(str(row["id"]), row["content"]) for row in corpus],
                [(str(row["query_id"]), row["text"]) for row in queries], qrels)
    blank = draw(st.booleans())
    return valid({"corpus.jsonl": _jsonl(corpus, blank), "queries.jsonl": _jsonl(queries),
                  "qrels.jsonl": _jsonl(qrels_rows, blank)}, expected)


def _read_dataset(root: Path) -> Any:
    from recall_kit.dataset import load_dataset

    dataset = load_dataset(root)
    return ([(memory.id, memory.content) for memory in dataset.corpus],
            [(query.query_id, query.text) for query in dataset.queries], dataset.qrels)


# -- the study file (TOML) -------------------------------------------------------------------------

SYSTEM_NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True)
LEGS = st.lists(st.sampled_from(["fts5", "dense", "graph", "bm25", "pg-fts"]), min_size=1, max_size=3, unique=True)


@st.composite
def _studies(draw: st.DrawFn) -> Case:
    names = draw(st.lists(SYSTEM_NAME, min_size=2, max_size=4, unique=True))
    systems, expected_systems = [], []
    for name in names:
        legs = draw(LEGS)
        weights = {leg: draw(st.floats(0, 10)) for leg in legs} if draw(st.booleans()) and len(legs) > 1 else {}
        entry: dict[str, Any] = {"name": name, "retriever": "+".join(legs)}
        if weights:
            entry["weights"] = weights
        systems.append(entry)
        expected_systems.append((name, "+".join(legs), [], weights))
    study: dict[str, Any] = {"name": draw(st.text(PLAIN, min_size=1, max_size=20))}
    hook_k = draw(st.integers(1, 50))
    if draw(st.booleans()):
        study["hook_k"] = hook_k
    else:
        hook_k = 5
    seed = draw(st.integers(0, 2**31))
    study["seed"] = seed
    data = draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True))
    text = toml({"study": study, "store": {"dataset": data}, "systems": systems})
    return valid({"study.toml": text}, (study["name"], "dataset", data, expected_systems, hook_k, seed, names[0],
                                        [f"recall@{hook_k}", f"mrr@{hook_k}"]))


def _read_study(root: Path) -> Any:
    from recall_kit.study.config import load_study

    config = load_study(root / "study.toml")
    # The store's path as written, relative to the study file's folder (it may lie outside it: "..").
    return (config.name, config.store.kind, Path(os.path.relpath(config.store.path, root.resolve())).as_posix(),
            [(system.name, system.retriever, system.fusions, system.weights) for system in config.systems],
            config.hook_k, config.seed, config.baseline, config.decision_metrics)


# -- an assessor's labels file ---------------------------------------------------------------------

@st.composite
def _labels(draw: st.DrawFn) -> Case:
    queries = draw(st.lists(JSON_ID, max_size=5, unique_by=str))
    rows, grades = [], {}
    for query in queries:
        judged = {str(doc): draw(st.integers(0, 3)) for doc in draw(st.lists(TEXT_ID, max_size=4, unique=True))}
        row: dict[str, Any] = {"query_id": query, "relevance": judged, "assessor": "ann",
                               "judged_at": {doc: "2026-01-01T00:00:00+00:00" for doc in judged}}
        if draw(st.booleans()) and judged:
            row["notes"] = {next(iter(judged)): draw(st.text(PLAIN, max_size=20))}
            row["flagged"] = [next(iter(judged))]
        rows.append(dict(sorted(row.items(), key=lambda _: draw(st.integers(0, 3)))))
        if judged:
            grades[str(query)] = judged
    return valid({"ann.jsonl": _jsonl(rows, draw(st.booleans()))}, grades)


def _read_labels(root: Path) -> Any:
    from recall_kit.curate.assessor import AssessorFile

    grades = AssessorFile.open(root / "ann.jsonl", "ann").grades
    return {query: judged for query, judged in grades.items() if judged}


# -- a study folder's manifest ---------------------------------------------------------------------

STEP = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)
HEX = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
RELATIVE = st.lists(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,8}", fullmatch=True).filter(
    lambda part: part not in (".", "..")), min_size=1, max_size=3).map("/".join)


@st.composite
def _manifests(draw: st.DrawFn) -> Case:
    from recall_kit.study.pipeline.folder import MANIFEST_SCHEMA
    from recall_kit.study.pipeline.graph import StepRecord

    steps, records = {}, {}
    for name in draw(st.lists(STEP, max_size=4, unique=True)):
        files = {path: draw(HEX) for path in draw(st.lists(RELATIVE, max_size=3, unique=True))}
        seconds = draw(st.floats(0, 1e6))
        steps[name] = {"fingerprint": draw(HEX), "files": files, "seconds": seconds}
        records[name] = StepRecord(steps[name]["fingerprint"], files, seconds)
    data = {"schema": MANIFEST_SCHEMA, "study": "../study.toml", "steps": steps}
    return valid({"manifest.json": json.dumps(data, indent=draw(st.sampled_from([None, 2]))).encode()}, records)


def _read_manifest(root: Path) -> Any:
    from recall_kit.study.pipeline.graph import StudyGraph

    records = StudyGraph(root, []).records
    for record in records.values():  # what a run then uses: text fingerprints and paths, a time
        assert isinstance(record.fingerprint, str) and math.isfinite(record.seconds) and record.seconds >= 0, record
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in record.files.items()), record
    return records


# -- a pool file -----------------------------------------------------------------------------------

@st.composite
def _pools(draw: st.DrawFn) -> Case:
    rows = [(draw(JSON_ID), draw(st.lists(JSON_ID, max_size=5, unique_by=str)))
            for _ in range(draw(st.integers(0, 5)))]
    text = _jsonl([{"query_id": query, "doc_ids": docs} for query, docs in rows], draw(st.booleans()))
    return valid({"pool.jsonl": text}, [(str(query), [str(doc) for doc in docs]) for query, docs in rows])


def _read_pool(root: Path) -> Any:
    from recall_kit.curate.judge import read_pool

    rows = read_pool(root / "pool.jsonl")
    for query, docs in rows:  # every id read is an id (one printable line), as the judges and qrels need
        assert as_id(query) == query and all(as_id(doc) == doc for doc in docs), (query, docs)
    return rows


# -- a recipe (a system's TOML) --------------------------------------------------------------------

@st.composite
def _recipes(draw: st.DrawFn) -> Case:
    from recall_kit.measure.systems.system import SystemSpec

    legs = draw(LEGS)
    fusions = draw(st.lists(st.sampled_from(["rrf", "weighted", "exact-bonus", "recency"]), max_size=2, unique=True))
    weights = {leg: draw(st.floats(0, 10) | st.integers(0, 10)) for leg in legs} if draw(st.booleans()) else {}
    options = {leg: {"k": draw(st.integers(1, 100)), "model": draw(st.text(PLAIN, max_size=10))}
               for leg in draw(st.lists(st.sampled_from(legs), unique=True))}
    system: dict[str, Any] = {"retriever": "+".join(legs)}
    if fusions:
        system["fusion"] = fusions[0] if len(fusions) == 1 and draw(st.booleans()) else fusions
    tables: dict[str, Any] = {"system": system}
    if weights:
        tables["weights"] = weights
    if options:
        tables["options"] = options
    expected = SystemSpec("+".join(legs), fusions, {k: float(v) for k, v in weights.items()}, options)
    return valid({"system.toml": toml(tables)}, expected)


def _read_recipe(root: Path) -> Any:
    from recall_kit.measure.systems.system import load_config

    return load_config(root / "system.toml")


# -- an HTTP answer and an MCP tool answer ---------------------------------------------------------

ANSWER_LAYOUT = st.sampled_from([("results", "id", "score"), ("", "id", "score"), ("data.hits", "memory_id", "sim"),
                                 ("results", "id", "")])


@st.composite
def _answers(draw: st.DrawFn) -> tuple[dict[str, str], Any, list[Any]]:
    """(the answer options, the answer's JSON, the hits it holds)."""
    from recall_kit.types import Hit

    results, id_key, score_key = draw(ANSWER_LAYOUT)
    ids = draw(st.lists(JSON_ID, max_size=6))
    scores = sorted((draw(FINITE) for _ in ids), reverse=True)
    entries: list[Any] = []
    for doc, score in zip(ids, scores, strict=True):
        entry = {id_key: doc, **({score_key: score} if score_key else {}), "text": draw(st.text(PLAIN, max_size=8))}
        entries.append(entry)
    payload: Any = entries
    for part in reversed(results.split(".") if results else []):
        payload = {part: payload}
    hits = [Hit(str(doc), score if score_key else 1.0 / rank)
            for rank, (doc, score) in enumerate(zip(ids, scores, strict=True), start=1)]
    return {"results": results, "id": id_key, "score": score_key}, payload, hits


def _options(root: Path) -> Any:
    from recall_kit_remote.base import AnswerOptions

    path = root / "options.json"
    return AnswerOptions(**json.loads(path.read_text())) if path.exists() else AnswerOptions()


@st.composite
def _http_answers(draw: st.DrawFn) -> Case:
    options, payload, hits = draw(_answers())
    body = json.dumps(payload, ensure_ascii=draw(st.booleans())).encode("utf-8")
    return valid({"answer.body": body, "options.json": json.dumps(options).encode()}, hits)


def _read_http(root: Path) -> Any:
    from recall_kit_remote.http import answer_hits

    options = _options(root)
    return answer_hits((root / "answer.body").read_bytes(), options, options.text_reading("http"))


@st.composite
def _mcp_answers(draw: st.DrawFn) -> Case:
    options, payload, hits = draw(_answers())
    text = json.dumps(payload)
    where = draw(st.sampled_from(["text", "structured", "both"]))
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}] if where != "structured" else []}
    if where != "text":
        result["structuredContent"] = payload if isinstance(payload, dict) else {"result": payload}
        if not isinstance(payload, dict):
            options = {**options, "results": "result"} if where == "structured" else options
    if draw(st.booleans()):
        result["isError"] = False
    return valid({"result.json": json.dumps(result).encode(), "options.json": json.dumps(options).encode()}, hits)


#: What the MCP target reads when the bytes are no tool result the SDK accepts (its part, not ours).
NOT_A_TOOL_RESULT = "not a tool result (the MCP SDK refuses it)"


def _read_mcp(root: Path) -> Any:
    import pydantic
    from mcp.types import CallToolResult
    from recall_kit_remote.mcp_tool import read_tool_answer

    options = _options(root)
    reading = options.text_reading("mcp")
    try:
        result = CallToolResult.model_validate_json((root / "result.json").read_bytes())
    except (pydantic.ValidationError, ValueError):
        return NOT_A_TOOL_RESULT
    return read_tool_answer(result, lambda payload: options.read_answer(payload, "mcp", reading),
                            text=reading.id_pattern is not None)


def _remote_errors() -> tuple[type[BaseException], ...]:
    from recall_kit_remote.base import QueryFailed

    from recall_kit.errors import RecallKitError

    return (RecallKitError, QueryFailed)


def targets() -> list[Target]:
    """Every reader's target (built on demand: the remote ones import the remote plugin)."""
    remote = _remote_errors()
    return [
        Target("trec-run", "a TREC run (`read_run`, and the fast `read_run_table` agreeing with it)", _runs(), _read_run,
               ["run.txt"], imports=["numpy", "recall_kit.measure.score.trec"], examples=list(RUN_EXAMPLES)),
        Target("trec-qrels", "TREC qrels (`read_qrels`, and `read_qrels_table` agreeing with it)", _qrels(),
               _read_qrels, ["qrels.txt"], imports=["numpy", "recall_kit.measure.score.trec"], examples=list(QRELS_EXAMPLES)),
        Target("dataset", "a dataset's corpus.jsonl, queries.jsonl, qrels.jsonl (`load_dataset`)", _datasets(),
               _read_dataset, ["corpus.jsonl", "queries.jsonl", "qrels.jsonl"], examples=list(DATASET_EXAMPLES)),
        Target("study", "a study file, study.toml (`load_study`)", _studies(), _read_study, ["study.toml"],
               imports=["recall_kit.study.config", "recall_kit.measure.systems.system"],
               examples=list(STUDY_EXAMPLES)),
        Target("labels", "an assessor's labels file (`AssessorFile.open`)", _labels(), _read_labels, ["ann.jsonl"],
               examples=list(LABELS_EXAMPLES)),
        Target("manifest", "a study folder's manifest.json (`StudyGraph`)", _manifests(), _read_manifest,
               ["manifest.json"], imports=["recall_kit.study.pipeline.graph"], examples=list(MANIFEST_EXAMPLES)),
        Target("pool", "a pool file (`read_pool`)", _pools(), _read_pool, ["pool.jsonl"], examples=list(POOL_EXAMPLES)),
        Target("recipe", "a recipe, a system's TOML (`load_config`)", _recipes(), _read_recipe, ["system.toml"],
               examples=list(RECIPE_EXAMPLES)),
        Target("http-answer", "an HTTP system's answer body (`recall_kit_remote.http.answer_hits`)", _http_answers(),
               _read_http, ["answer.body"], errors=remote, imports=["recall_kit_remote.http"], examples=list(HTTP_EXAMPLES)),
        Target("mcp-answer", "an MCP tool's answer (`read_tool_answer` on the SDK's CallToolResult)", _mcp_answers(),
               _read_mcp, ["result.json"], errors=remote, imports=["mcp.types", "recall_kit_remote.mcp_tool"], examples=list(MCP_EXAMPLES)),
    ]


# -- the findings of the long runs, kept (each failed before its fix) ------------------------------

RUN_EXAMPLES: list[Case] = [
    # A NUL byte in an id: numpy's bytes arrays dropped it (the fast reader read "", the exact one
    # "\x00"; trec_eval's C strings end there): now refused, naming the line.
    unknown({"run.txt": b"\x00 Q0 0 1 0.0 tag\n"}),
    unknown({"run.txt": b"q Q0 d\x00 1 0.0 tag\n"}),
]
QRELS_EXAMPLES: list[Case] = [
    unknown({"qrels.txt": b"q 0 d\x00 1\n"}),  # the same NUL byte in qrels
]
DATASET_EXAMPLES: list[Case] = []
STUDY_EXAMPLES: list[Case] = [
    # `systems = true` (not an array of tables): a TypeError from the loop over it (issue 72's first run).
    unknown({"study.toml": b'"systems" = true\n["study"]\n"name" = "0"\n"seed" = 0\n\n["store"]\n"dataset" = "a"\n'}),
    # A NUL in a path the file names: ValueError("embedded null byte") from resolving it (make fuzz, 2026-12-07).
    unknown({"study.toml": b'["study"]\n"name" = "0"\n"seed" = 0\n\n["store"]\n"dataset" = "\\u0000"\n\n'
                           b'[["systems"]]\n"name" = "0"\n"retriever" = "fts5"\n[["systems"]]\n"name" = "9"\n'
                           b'"retriever" = "fts5"\n'}),
    # A store outside the study's folder is a store like any other (the target once assumed inside).
    unknown({"study.toml": b'["study"]\n"name" = "0"\n"seed" = 0\n\n["store"]\n"dataset" = ".."\n\n'
                           b'[["systems"]]\n"name" = "D"\n"retriever" = "fts5"\n[["systems"]]\n"name" = "0"\n'
                           b'"retriever" = "fts5"\n'}),
]
LABELS_EXAMPLES: list[Case] = []
MANIFEST_EXAMPLES: list[Case] = [
    # A file's hash null (or a number, a fingerprint not text, seconds infinite) was kept as read: every
    # step's entry is now checked, and a manifest recall-kit did not write is refused whole.
    unknown({"manifest.json": b'{"schema": "recall-kit/study-manifest/1", "study": "../study.toml", "steps": {"a": '
                              b'{"fingerprint": "00", "files": {"0": null}, "seconds": 0.0}}}'}),
    unknown({"manifest.json": b'{"schema": "recall-kit/study-manifest/1", "study": "../study.toml", "steps": {"a": '
                              b'{"fingerprint": 7, "files": {}, "seconds": 1e999}}}'}),
]
POOL_EXAMPLES: list[Case] = [
    # Ids that are no ids (empty, null, a list, a line break) were read through str(): "", "None", "[1]".
    unknown({"pool.jsonl": b'{"query_id": "0", "doc_ids": [""]}\n'}),
    unknown({"pool.jsonl": b'{"query_id": null, "doc_ids": [[1], "a\\nb"]}\n'}),
]
RECIPE_EXAMPLES: list[Case] = []
HTTP_EXAMPLES: list[Case] = []
MCP_EXAMPLES: list[Case] = []

__all__ = ["Case", "targets", "unknown"]
