"""The system's flags are declared once (`system_options`) and reach eval, ablate and sweep alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from recall_kit.cli import app
from recall_kit.cli.options import SystemFlags, system_options

SYSTEM_FLAGS = ["--retriever", "--fusion", "--weights", "--option", "--config"]


@pytest.mark.parametrize("name", ["eval", "ablate", "sweep"])
def test_each_run_command_takes_the_system_flags_in_one_order(name):
    command = typer.main.get_command(app).commands[name]
    flags = [param.opts[0] for param in command.params if param.opts[0] in SYSTEM_FLAGS]
    assert flags == SYSTEM_FLAGS
    first = [param.opts[0] for param in command.params].index("--retriever")
    assert [param.opts[0] for param in command.params][first:first + 5] == SYSTEM_FLAGS
    config = next(param for param in command.params if param.opts[0] == "--config")
    assert config.multiple is (name == "eval")  # eval alone evaluates several --config files


def test_the_command_gets_one_system_flags():
    seen: list[SystemFlags] = []

    @system_options()
    def single(k: int = 1, system: SystemFlags | None = None) -> None:
        assert system is not None
        seen.append(system)

    @system_options(several_configs=True)
    def several(system: SystemFlags) -> None:
        seen.append(system)

    single(k=2, retriever="fts5", fusion=["rrf"], weights=["fts5=1"], option=["rrf.k=60"], config=Path("a.toml"))
    single(k=2, retriever=None, fusion=None, weights=None, option=None, config=None)
    several(retriever="fts5", fusion=None, weights=None, option=None, config=[Path("a.toml"), Path("b.toml")])
    assert seen == [SystemFlags("fts5", ["rrf"], ["fts5=1"], ["rrf.k=60"], (Path("a.toml"),)),
                    SystemFlags(), SystemFlags("fts5", configs=(Path("a.toml"), Path("b.toml")))]
    assert (seen[0].config, seen[1].config, seen[2].config) == (Path("a.toml"), None, Path("a.toml"))


def test_a_command_without_a_system_parameter_is_refused():
    with pytest.raises(TypeError, match="system"):
        system_options()(lambda k=1: None)


def test_repeated_weights_add_legs_and_a_leg_weighted_twice_is_refused():
    """Before: `-w bm25=0 -w fts5=0` kept the last flag alone (click's way with a flag given twice),
    so the run was bm25 with fts5 at 0, not the refusal every leg at 0 deserves."""
    from recall_kit.errors import OptionError

    assert SystemFlags("fts5+bm25", weights=["fts5=1", "bm25=0.5"]).spec(None).weights == {"fts5": 1.0, "bm25": 0.5}
    with pytest.raises(OptionError, match="leg 'fts5' is given twice"):
        SystemFlags("fts5+bm25", weights=["fts5=1", "fts5=2"]).spec(None)
    from study_support import plugins

    from recall_kit.testing import invoke_cli

    with plugins("recall-kit-fts5", "recall-kit-bm25", "recall-kit-fusion"):
        zero = invoke_cli(["eval", "--dataset", "example:memories", "-r", "fts5+bm25", "--fusion", "rrf",
                           "-w", "bm25=0", "-w", "fts5=0"])
    assert zero.exit_code == 2 and "Every leg has weight 0" in zero.output
