"""Root test configuration: tests never pick up whatever plugins happen to be installed, nor read or
write the user's cache folder; in a parallel run (`make test`: pytest-xdist, `--dist loadgroup`) a
module with a module-scoped fixture runs on one worker, and the longest work (the groups and
tests holding the most tests marked `slow`) is handed out first."""

import gc
import os
import shutil
import signal
import tempfile
from collections import Counter

import pytest
from hypothesis import settings

# Property tests draw from a fixed seed (hypothesis's derandomize): `make test` gives the same
# result on every run. HYPOTHESIS_PROFILE=random draws new examples, on demand:
#   HYPOTHESIS_PROFILE=random .venv/bin/python -m pytest plugins/recall-kit-bm25/tests
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("random")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

# Tests register the plugins they need (recall_kit.testing.registered_plugin); subprocess
# tests name the plugins they load in RECALL_KIT_LOAD_PLUGINS themselves.
os.environ["RECALL_KIT_LOAD_PLUGINS"] = ""

# Nothing a test runs reads or writes the user's cache folder (~/.cache/recall-kit: embeddings,
# checkpoints, models): a test that sets no RECALL_KIT_CACHE of its own uses one throwaway folder
# made for the run, which starts empty as on a fresh machine, whatever earlier runs left behind,
# and which the xdist workers share (they inherit the controller's environment, as the CLI
# processes the tests start do). Removed when the run ends.
_RUN_CACHE: str | None = None
if "PYTEST_XDIST_WORKER" not in os.environ:
    _RUN_CACHE = tempfile.mkdtemp(prefix="recall-kit-test-cache-")
    os.environ["RECALL_KIT_CACHE"] = _RUN_CACHE


#: The thread pools of the numeric libraries (torch's OpenMP, OpenBLAS, MKL), held to one thread in
#: a parallel run, before any worker starts: with one worker a core, a second thread per library
#: only waits, spinning, for a core the other worker holds (`test_same_rankings_as_torch_on_the_example`:
#: 21.4 -> 16.5 s of CPU, 39.5 -> 22.4 s at load 4; docs/performance.md, the test suite). A value set
#: outside is kept; ONNX Runtime's threads are the code's own (`dense.threads`).
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    workers = getattr(config.option, "numprocesses", None)  # -n auto: a number by now (xdist's cmdline_main)
    if "PYTEST_XDIST_WORKER" not in os.environ and isinstance(workers, int) and workers > 1:
        for name in ONE_THREAD:
            os.environ.setdefault(name, "1")
    # xdist would hand the groups out by their number of tests (largest first), then every test
    # alone, overriding the order `pytest_collection_modifyitems` gives (the longest work first).
    if getattr(config.option, "dist", None) == "loadgroup":
        config.option.loadscopereorder = False


def pytest_collection_finish(session: pytest.Session) -> None:
    """What every test imported at collection (torch, transformers, scipy, the plugins: millions of
    objects that live as long as the process) is moved out of the garbage collector's reach: a full
    collection no longer walks them, again and again, in a long run (measured: 53 s of the workers'
    CPU in a full run before, 24 s after; docs/performance.md, the test suite). Rarer collections
    after it were tried and left out (thresholds 5,000 / 20 / 100: 13.3 -> 3.2 s in the collector
    over tests/study, tests/decide and tests/measure, but no gain a fresh clone could show: its
    tests 589 s and 585 s with them, 551 s and 607 s without, the machine drifting more than that)."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _RUN_CACHE is not None:
        shutil.rmtree(_RUN_CACHE, ignore_errors=True)


# A run started in the background without job control (`make test &`, nohup, some CI runners)
# inherits SIGINT ignored, and so would every CLI process the tests start: the tests that press
# Ctrl-C on one would wait on a process that never sees it. Caught here, it is reset to the
# default in each child at exec, where Python turns it into KeyboardInterrupt as a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once per module or class (a model, an index, a run),
    or one built once per session by its own module (test_executor's local Ray cluster: one
    cluster for the run, not one per worker that happens to get one of its tests)."""
    definitions = getattr(item, "_fixtureinfo", None)
    if definitions is None:
        return False
    module = getattr(getattr(item, "module", None), "__name__", None)
    return any(definition.scope in ("module", "class")
               or (definition.scope == "session" and getattr(definition.func, "__module__", None) == module)
               for chain in definitions.name2fixturedefs.values() for definition in chain)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker (every worker collects the same list, so each takes the same decisions):

    - a module whose tests share a module- or class-scoped fixture becomes one group (or joins the
      group one of its tests is marked with), so the fixture is built once, not once per worker
      that happens to get one of its tests;
    - the longest work first, so that a run does not end with one worker on a long test or group
      while the others idle: the `slow` tests first (a stable sort) and, with `--dist loadgroup`,
      the units a worker runs whole (a group, or a test of no group) by their number of `slow`
      tests, then of tests, most first (xdist keeps this order: `pytest_configure`)."""
    if not hasattr(config, "workerinput"):
        return
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not config.getvalue("loadgroup"):
        return
    _group_modules(items)
    # A unit runs whole on one worker, and one that starts last leaves the other worker idle while
    # it runs: the one holding the most slow tests first (a group running the example study's
    # proxies before a single slow test), then the largest.
    slow = Counter(_unit_of(item) for item in items if item.get_closest_marker("slow") is not None)
    sizes = Counter(_unit_of(item) for item in items)
    items.sort(key=lambda item: (-slow[_unit_of(item)], -sizes[_unit_of(item)]))


def _mark_name(mark: pytest.Mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _group_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return None if mark is None else _mark_name(mark)


def _unit_of(item: pytest.Item) -> str:
    """What `--dist loadgroup` hands a worker whole: the test's group, or the test alone."""
    return _group_of(item) or item.nodeid


def _group_modules(items: list[pytest.Item]) -> None:
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
    names = sorted({_mark_name(mark) for mark in item.iter_markers("xdist_group")})
    if not names or not hasattr(item, "_id") or "@" in item.nodeid.rsplit("]", 1)[-1]:
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")

