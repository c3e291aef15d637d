"""Shell completion completes option values from the registry: retrievers (each leg of a '+' spec),
fusions, metrics (each of a comma list), reporters and the paired tests; driven as bash does it,
through the real program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = "recall-kit-fts5,recall-kit-dense,recall-kit-fusion"


def complete(*words: str) -> list[str]:
    env = {**os.environ, "_RECALL_KIT_COMPLETE": "complete_bash", "COMP_WORDS": " ".join(["recall-kit", *words]),
           "COMP_CWORD": str(len(words)), "RECALL_KIT_LOAD_PLUGINS": PLUGINS}
    # The installed program (its name picks the completion variable), beside this Python.
    program = Path(sys.executable).parent / "recall-kit"
    done = subprocess.run([str(program)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(("words", "expected"), [
    (("eval", "--retriever", "fts5+de"), ["fts5+dense"]),
    (("eval", "-r", "ft"), ["fts5"]),
    (("compare", "--test", "t"), ["t-test", "tukey"]),
    (("score", "--test", "wil"), ["wilcoxon"]),
    (("score", "--report", "trec"), ["trec_eval"]),
    (("eval", "--report", "trec"), []),  # offered only where it renders
    (("ablate", "--report", "t"), ["table"]),
    (("eval", "-m", "recall@10,ndcg@"), ["recall@10,ndcg@10"]),
    (("score", "-m", "all_t"), ["all_trec"]),
])
def test_option_values_complete(words, expected):
    assert complete(*words) == expected


def test_fusions_complete_from_the_installed_plugins():
    assert {"rrf", "rescore"} <= set(complete("eval", "--fusion", "r"))
