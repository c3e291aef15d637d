"""`recall-kit list extractors` lists the graph plugin's own kind like the host's kinds."""

from __future__ import annotations

import recall_kit_graph

from recall_kit.testing import invoke_cli, registered_plugin


def test_list_extractors():
    with registered_plugin(recall_kit_graph, name="recall-kit-graph"):
        done = invoke_cli(["list", "extractors"])
    assert done.exit_code == 0, done.output
    rows = {line.split()[0]: line for line in done.output.splitlines()[2:] if line.strip()}
    assert {"rules", "triples"} <= set(rows)
    assert all("recall-kit-graph" in row for row in rows.values())
