"""The package's layers run one way (pyproject.toml [tool.importlinter]; docs/architecture.md)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_layers_contract_is_kept(capsys):
    from importlinter.cli import lint_imports

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:
        os.chdir(here)
    assert status == 0, capsys.readouterr().out


def test_contract_catches_an_upward_import():
    # The contract is not vacuous: a core module importing the decide layer breaks it.
    import grimp
    from importlinter.contracts.layers import LayersContract

    pyproject = (ROOT / "pyproject.toml").read_text()
    layers = pyproject.split("layers = [", 1)[1].split("]", 1)[0]
    names = [line.strip().strip(",").strip('"') for line in layers.splitlines() if line.strip().startswith('"')]
    assert names[0] == "recall_kit.cli" and len(names) >= 10
    graph = grimp.build_graph("recall_kit", cache_dir=None, exclude_type_checking_imports=True)
    contract = LayersContract(name="layers", session_options={"root_packages": ["recall_kit"]},
                              contract_options={"layers": names})
    assert contract.check(graph, verbose=False).kept
    graph.add_import(importer="recall_kit.types", imported="recall_kit.decide.compare", line_number=1,
                     line_contents="from recall_kit.decide.compare import compare_results")
    assert not contract.check(graph, verbose=False).kept
