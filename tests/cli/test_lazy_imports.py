"""A lexical command imports what it needs and no more: `eval` with fts5 or bm25, `score` and
`compare` run in a fresh process with every installed plugin loaded, and none of them imports
torch, transformers or sentence-transformers (docs/performance.md, start-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recall_kit import load_result

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime")
EXAMPLE = REPO / "examples" / "memories"


def heavy_imports(argv: list[str], cwd: Path) -> list[str]:
    """The heavy modules `recall-kit *argv` imported, run in a fresh process (exit status 0)."""
    code = (
        "import sys\n"
        f"sys.argv = ['recall-kit', *{argv!r}]\n"
        "from recall_kit.cli import main\n"
        "status = 0\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    status = exit.code or 0\n"
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules], status)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "RECALL_KIT_LOAD_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)
    line = next((line for line in done.stdout.splitlines() if line.startswith("HEAVY ")), None)
    assert line is not None and line.endswith(" 0"), done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(line[len("HEAVY "):-len(" 0")].replace("'", '"'))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two lexical results and their TREC runs and qrels, written by the CLI in one process."""
    folder = tmp_path_factory.mktemp("lexical")
    for name in ("fts5", "bm25"):
        subprocess.run([sys.executable, "-m", "recall_kit", "eval", "--dataset", str(EXAMPLE), "--retriever", name,
                        "--json", str(folder / f"{name}.json"), "--no-progress"], check=True, capture_output=True,
                       env={**os.environ, "RECALL_KIT_LOAD_PLUGINS": f"recall-kit-{name}"}, timeout=300)
        result = load_result(folder / f"{name}.json")
        with (folder / f"{name}.run").open("w", encoding="utf-8") as run:
            for query in result.queries:
                for rank, memory in enumerate(query.ranking, start=1):
                    run.write(f"{query.query_id} Q0 {memory} {rank} {1.0 / rank:.6f} {name}\n")
    with (folder / "qrels.txt").open("w", encoding="utf-8") as qrels:
        for line in (EXAMPLE / "qrels.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            grades = row.get("relevance") or {memory: 1 for memory in row["relevant_ids"]}
            for memory, grade in grades.items():
                qrels.write(f"{row['query_id']} 0 {memory} {grade}\n")
    return folder


@pytest.mark.parametrize("command", ["eval-fts5", "eval-bm25", "score", "compare"])
def test_a_lexical_command_imports_no_torch(command: str, runs: Path) -> None:
    argv = {
        "eval-fts5": ["eval", "--dataset", str(EXAMPLE), "--retriever", "fts5", "--no-progress"],
        "eval-bm25": ["eval", "--dataset", str(EXAMPLE), "--retriever", "bm25", "--no-progress"],
        "score": ["score", "--qrels", str(runs / "qrels.txt"), "--run", str(runs / "fts5.run"),
                  "--run", str(runs / "bm25.run")],
        "compare": ["compare", str(runs / "fts5.json"), str(runs / "bm25.json")],
    }[command]
    assert heavy_imports(argv, runs) == []


BLAS_PROBE = """
import os, sys
seen = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
sys.meta_path.insert(0, Watch())
sys.argv = ["recall-kit", "eval", "--dataset", {dataset!r}, "-r", "fts5", "--no-progress"]
from recall_kit.cli import main
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print("AT NUMPY", seen)
"""


@pytest.mark.parametrize(("given", "expected"), [(None, "20"), ("28", "28")])
def test_openblas_idle_threads_sleep_soon_unless_the_user_says(given: str | None, expected: str) -> None:
    """When numpy (and with it OpenBLAS, which reads it once) is imported, the command has asked
    OpenBLAS's idle threads to sleep after 2**20 cycles rather than spin 2**28 (docs/performance.md);
    a value the user set is kept."""
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_THREAD_TIMEOUT"}
    env["RECALL_KIT_LOAD_PLUGINS"] = "recall-kit-fts5"
    if given is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = given
    done = subprocess.run([sys.executable, "-c", BLAS_PROBE.format(dataset=str(EXAMPLE))], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"AT NUMPY [{expected!r}]" in done.stdout
