"""`study init --retriever http|mcp|command` (recall_kit.study.init.live): the running system becomes the
baseline with its options, on a dataset folder; what it cannot do is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall_kit.errors import OptionError
from recall_kit.study.config import load_study
from recall_kit.study.init.live import LIVE_NAME, init_live_study

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memories"


def test_the_running_system_is_the_baseline_with_its_options(tmp_path: Path) -> None:
    path = init_live_study(tmp_path / "study.toml", "http", ["http.url=http://127.0.0.1:8080/search"], dataset=EXAMPLE)
    config = load_study(path)
    assert config.baseline == LIVE_NAME
    live = next(system for system in config.systems if system.name == LIVE_NAME)
    assert live.retriever == "http" and live.options == {"http": {"url": "http://127.0.0.1:8080/search"}}


@pytest.mark.parametrize(("retriever", "kwargs", "message"), [
    ("bm25", {"dataset": EXAMPLE}, "a running system is reached through"),
    ("http", {}, "name the memories"),
])
def test_what_it_cannot_do_is_one_error(tmp_path: Path, retriever: str, kwargs: dict[str, Path], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        init_live_study(tmp_path / "study.toml", retriever, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "study.toml").exists()


def test_an_existing_file_is_kept_without_force(tmp_path: Path) -> None:
    (tmp_path / "study.toml").write_text("mine", encoding="utf-8")
    with pytest.raises(OptionError, match="exists; choose another path or pass --force"):
        init_live_study(tmp_path / "study.toml", "http", dataset=EXAMPLE)
    assert (tmp_path / "study.toml").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize(("flags", "said"), [
    (["--dataset", str(EXAMPLE), "-o", "http.url=http://x"], "-o/--option has no effect without --retriever"),
    (["--dataset", str(EXAMPLE), "--snapshot", "http", "--snapshot-option", "url=http://x"],
     "--snapshot, --snapshot-option have no effect without --retriever"),
    (["--retriever", "http", "--dataset", str(EXAMPLE), "--table", "notes", "--baseline", "bm25"],
     "--baseline, --table have no effect with --retriever"),
    (["--retriever", "http", "--dataset", str(EXAMPLE), "--snapshot-from", str(EXAMPLE)],
     "--snapshot-from has no effect without --snapshot"),
], ids=["option", "snapshot", "store flags", "snapshot-from"])
def test_a_flag_that_means_nothing_with_the_others_is_one_line_not_ignored(tmp_path: Path, flags: list[str],
                                                                          said: str) -> None:
    """Before: `-o` without --retriever, --sqlite or --baseline beside it, were dropped silently."""
    from recall_kit.testing import invoke_cli

    result = invoke_cli(["study", "init", str(tmp_path / "study.toml"), *flags])
    assert result.exit_code == 2 and result.output.startswith(f"Error: {said}"), result.output
    assert result.output.strip().count("\n") == 0 and not (tmp_path / "study.toml").exists()
