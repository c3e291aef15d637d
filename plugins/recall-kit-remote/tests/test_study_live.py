"""`recall-kit study init --retriever http --snapshot http`: the running service as the study's
baseline, its memories listed by the snapshot importer (a real REST server, the test one)."""

from __future__ import annotations

from pathlib import Path

from http_server import SearchServer
from memory_store import MemoryStore
from remote_helpers import EXAMPLE, run_cli

from recall_kit import load_dataset


def test_study_init_from_a_running_service_lists_its_memories_and_makes_it_the_baseline(tmp_path: Path) -> None:
    study = tmp_path / "live.toml"
    with SearchServer(MemoryStore.from_store(str(EXAMPLE))) as server:
        base = server.url.rsplit("/", 1)[0]
        done = run_cli("study", "init", str(study), "--retriever", "http", "-o", f"http.url={server.url}",
                       "--snapshot", "http", "--snapshot-from", str(EXAMPLE),
                       "--snapshot-option", f"url={base}/memories")
    assert done.returncode == 0, done.stderr
    snapshot, example = load_dataset(str(tmp_path / "live-snapshot")), load_dataset(str(EXAMPLE))
    assert {memory.id for memory in snapshot.corpus} == {memory.id for memory in example.corpus}
    assert snapshot.sensitive_ids == example.sensitive_ids  # left out by id, their text never written
    text = study.read_text()
    assert 'baseline = "live"' in text and 'dataset = "live-snapshot"' in text
    assert f'[systems.options.http]\nurl = "{server.url}"' in text
    status = run_cli("study", "status", str(study))
    assert status.returncode == 1 and "missing  run/live" in status.stdout


def test_study_init_with_a_retriever_that_is_not_live_is_one_line(tmp_path: Path) -> None:
    done = run_cli("study", "init", str(tmp_path / "s.toml"), "--retriever", "bm25", "--dataset", str(EXAMPLE))
    assert done.returncode == 2 and "a running system is reached through http, mcp, command" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "s.toml").exists()
    done = run_cli("study", "init", str(tmp_path / "s.toml"), "--retriever", "http", "-o", "http.url=x")
    assert done.returncode == 2 and "name the memories" in done.stderr
