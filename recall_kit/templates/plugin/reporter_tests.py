"""The `my-plugin` reporter: registration and output written out by hand."""

from recall_kit import Report, ReportTable
from recall_kit.testing import registries

import recall_kit_my_plugin
from recall_kit_my_plugin import MyPluginReporter


def test_registers_under_its_name(recall_kit_plugin):
    recall_kit_plugin(recall_kit_my_plugin)
    assert registries()["reporters"].get("my-plugin").obj is MyPluginReporter


def test_renders_tables_as_tab_separated_values():
    report = Report(title="t", tables=[
        ReportTable(title="overall", headers=["system", "recall@10"], rows=[["fts5", 0.5]]),
        ReportTable(title="strata", headers=["stratum", "n"], rows=[["exact\tstrict", 3]]),
    ])
    assert MyPluginReporter().render(report) == (
        "# overall\nsystem\trecall@10\nfts5\t0.5\n"
        "\n"
        "# strata\nstratum\tn\nexact strict\t3\n"
    )
