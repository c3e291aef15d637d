"""Fixtures for the host's tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Off a terminal a run prints a progress line every RECALL_KIT_PROGRESS_INTERVAL seconds; on a busy
# machine a test's run can last that long, and its stderr should hold only what the test checks
# (tests/test_progress.py sets its own interval).
os.environ.setdefault("RECALL_KIT_PROGRESS_INTERVAL", "600")

from helpers import OverlapPlugin, write_dataset  # noqa: E402

from recall_kit.testing import registered_plugin  # noqa: E402


@pytest.fixture
def overlap_plugin():
    """The `overlap` retriever, registered for one test."""
    with registered_plugin(OverlapPlugin(), name="overlap-plugin") as plugin:
        yield plugin


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "tiny")


@pytest.fixture
def conversations(tmp_path: Path) -> Path:
    """Two synthetic LoCoMo-format conversations, imported (turns carry `session` and `created_at`)."""
    from helpers import write_conversations

    return write_conversations(tmp_path / "conversations")


def _installed() -> set[tuple[str, str]]:
    """The distributions installed in this environment's site-packages (name, version)."""
    import importlib.metadata
    import sysconfig

    folders = list(dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]))
    return {(str(d.metadata["Name"]), d.version) for d in importlib.metadata.distributions(path=folders)}


@pytest.fixture(scope="session", autouse=True)
def environment_left_as_make_made_it():
    """Issue 70: `make test` leaves the environment as `make` made it. Every distribution
    installed here when the session began is there at its end, at the same version, and nothing
    was added (a test that installs does it in a throwaway environment: tests/docs)."""
    before = _installed()
    yield
    after = _installed()
    assert after == before, f"the tests changed this environment: removed {sorted(before - after)}, added {sorted(after - before)}"


@pytest.fixture(scope="session")
def example_study_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped example study, run once for the test process: `recall-kit study run
    examples/study.toml` in a folder laid out as a clone's examples/ (study_support.run_example_study).
    Returns that folder (its examples/study-out is the study folder). Its tests read it and change
    none of its inputs (tests/study/test_example.py writes its Reproduce lines' outputs beside the
    study's files); they share one xdist group (`example-study`), so a parallel run computes it once."""
    from study_support import run_example_study

    folder = tmp_path_factory.mktemp("example-study-run")
    run_example_study(folder)
    return folder
