"""Root test configuration: tests never pick up whatever plugins happen to be installed; in a
parallel run (`make test`: pytest-xdist, `--dist loadgroup`) a module with a module-scoped fixture
runs on one worker, and the tests marked `slow` are handed out first."""

import os

import pytest

# Tests register the plugins they need (recall_kit.testing.registered_plugin); subprocess
# tests name the plugins they load in RECALL_KIT_LOAD_PLUGINS themselves.
os.environ["RECALL_KIT_LOAD_PLUGINS"] = ""


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once per module or class (a model, an index, a run)."""
    definitions = getattr(item, "_fixtureinfo", None)
    if definitions is None:
        return False
    return any(definition.scope in ("module", "class")
               for chain in definitions.name2fixturedefs.values() for definition in chain)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker (every worker collects the same list, so each takes the same decisions):

    - a module whose tests share a module- or class-scoped fixture becomes one group (or joins the
      group one of its tests is marked with), so the fixture is built once, not once per worker
      that happens to get one of its tests;
    - the `slow` tests first (a stable sort), so that a run does not end with one worker on a long
      test while the others idle."""
    if not hasattr(config, "workerinput"):
        return
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not config.getvalue("loadgroup"):
        return
    marked: dict[str, pytest.MarkDecorator] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None:
            marked.setdefault(item.nodeid.split("::", 1)[0], pytest.mark.xdist_group(*mark.args, **mark.kwargs))
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if item.get_closest_marker("xdist_group") is None and _module_scoped(item):
            item.add_marker(marked.get(module) or pytest.mark.xdist_group(module))
        _name_group(item)


def _name_group(item: pytest.Item) -> None:
    """Append `@GROUP` to the test's id, which is how `--dist loadgroup` sees its group. pytest-xdist
    3.8 does it by setting `item._nodeid`, which pytest 9.2 no longer reads (its id is `item._id`):
    without this, every xdist_group mark would be ignored and the group's tests spread over workers."""
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})
    if not names or not hasattr(item, "_id") or "@" in item.nodeid.rsplit("]", 1)[-1]:
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")

