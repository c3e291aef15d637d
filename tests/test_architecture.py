"""The package's layers run one way (pyproject.toml [tool.importlinter]; docs/architecture.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def importlinter_configured():
    """import-linter's settings (its timer, graph builder, file system), as `lint-imports` sets
    them before checking a contract: a test that checks a contract by hand must not depend on
    test_layers_contract_is_kept having run before it in the same process (in a parallel run it
    need not have)."""
    from importlinter.configuration import configure

    configure()


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
    assert names[0] == "recall_kit.testing" and len(names) >= 10
    graph = grimp.build_graph("recall_kit", cache_dir=None, exclude_type_checking_imports=True)
    contract = LayersContract(name="layers", session_options={"root_packages": ["recall_kit"]},
                              contract_options={"layers": names})
    assert contract.check(graph, verbose=False).kept
    graph.add_import(importer="recall_kit.types", imported="recall_kit.decide.compare", line_number=1,
                     line_contents="from recall_kit.decide.compare import compare_results")
    assert not contract.check(graph, verbose=False).kept


def _contract(name: str) -> dict:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return next(c for c in config["contracts"] if c["name"] == name)


def test_measure_layers_contract_catches_an_upward_import():
    # run > result_report | comparable > result > result_sections > score | systems, inside measure/:
    # scoring importing the runner breaks it, and so does the sections importing the document.
    import grimp
    from importlinter.contracts.layers import LayersContract

    options = _contract("measure's parts run one way")
    assert options["layers"] == ["run", "result_report | comparable", "result", "result_sections", "score | systems"]
    graph = grimp.build_graph("recall_kit", cache_dir=None, exclude_type_checking_imports=True)
    contract = LayersContract(name="measure", session_options={"root_packages": ["recall_kit"]},
                              contract_options={key: options[key] for key in ("containers", "layers")})
    assert contract.check(graph, verbose=False).kept
    upward = [("recall_kit.measure.score.evaluation", "recall_kit.measure.run.runner"),
              ("recall_kit.measure.result_sections", "recall_kit.measure.result")]
    for importer, imported in upward:
        changed = grimp.build_graph("recall_kit", cache_dir=None, exclude_type_checking_imports=True)
        changed.add_import(importer=importer, imported=imported, line_number=1,
                           line_contents=f"from {imported} import x")
        assert not contract.check(changed, verbose=False).kept, importer


def test_decide_uses_measure_run_through_its_front_alone():
    # The contract names every module behind measure/run's front, so a new one cannot slip past, and
    # it is not vacuous: decide importing the runner directly breaks it.
    import grimp
    from importlinter.contracts.forbidden import ForbiddenContract

    options = _contract("decide uses measure/run through its front")
    behind = {f"recall_kit.measure.run.{path.stem}" for path in (ROOT / "recall_kit/measure/run").glob("*.py")
              if path.stem != "__init__"}
    assert set(options["forbidden_modules"]) == behind
    graph = grimp.build_graph("recall_kit", cache_dir=None, exclude_type_checking_imports=False)
    direct = {imported for module in graph.find_descendants("recall_kit.decide")
              for imported in graph.find_modules_directly_imported_by(module) if imported.startswith("recall_kit.measure.run")}
    assert direct == {"recall_kit.measure.run"}
    contract = ForbiddenContract(
        name="decide", session_options={"root_packages": ["recall_kit"]},
        contract_options={"source_modules": options["source_modules"], "forbidden_modules": options["forbidden_modules"],
                          "allow_indirect_imports": "true"})
    assert contract.check(graph, verbose=False).kept
    graph.add_import(importer="recall_kit.decide.sweep", imported="recall_kit.measure.run.runner", line_number=1,
                     line_contents="from recall_kit.measure.run.runner import search_depth")
    assert not contract.check(graph, verbose=False).kept


def test_every_name_of_measure_runs_front_loads():
    import importlib

    import recall_kit.measure.run as front

    assert sorted(front.__all__) == sorted(front._LAZY)
    for name in front.__all__:
        assert getattr(front, name) is getattr(importlib.import_module(front._LAZY[name]), name), name


#: How many non-blank lines of Python one folder of recall_kit/ may hold directly (its sub-folders
#: apart): past it, a folder holds more than one concern and is split, as measure/ was.
MAX_FOLDER_LINES = 4_000


def folder_lines(folder: Path) -> int:
    return sum(1 for path in folder.glob("*.py") for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip())


def test_no_folder_of_the_host_holds_more_than_about_4000_lines():
    sizes = {folder.relative_to(ROOT).as_posix(): folder_lines(folder)
             for folder in [ROOT / "recall_kit", *(ROOT / "recall_kit").rglob("*")]
             if folder.is_dir() and folder.name != "__pycache__"}
    assert sizes["recall_kit/measure/score/metrics"] > 1_000  # the count is not vacuous
    too_big = {name: lines for name, lines in sizes.items() if lines > MAX_FOLDER_LINES}
    assert not too_big, f"split these folders by concern: {too_big}"


# -- the declared plugin API -----------------------------------------------------------------------

#: What a plugin may import from recall-kit; its tests (and the scaffold's templates) add testing.
PLUGIN_API = {"recall_kit", "recall_kit.plugin"}
TEST_API = PLUGIN_API | {"recall_kit.testing"}


def _plugin_contract() -> dict:
    return _contract("plugins import only the declared plugin API")


def _plugin_packages() -> set[str]:
    return {path.parent.name for folder in ("plugins", "examples")
            for path in (ROOT / folder).glob("recall-kit-*/recall_kit_*/__init__.py")}


def test_plugin_contract_names_every_plugin_and_every_host_module():
    # Not vacuous by omission: a new plugin package or a new recall_kit module is covered or fails here.
    contract = _plugin_contract()
    assert set(contract["source_modules"]) == _plugin_packages()
    assert set(contract["forbidden_modules"]) == _host_modules() - PLUGIN_API


def test_plugin_contract_catches_a_deep_import():
    import grimp
    from importlinter.contracts.forbidden import ForbiddenContract

    contract_options = _plugin_contract()
    roots = ["recall_kit", *sorted(_plugin_packages())]
    graph = grimp.build_graph(*roots, cache_dir=None, exclude_type_checking_imports=True)
    contract = ForbiddenContract(
        name="plugin API", session_options={"root_packages": roots},
        contract_options={key: contract_options[key] for key in ("source_modules", "forbidden_modules")}
        | {"allow_indirect_imports": "true"})
    assert contract.check(graph, verbose=False).kept
    graph.add_import(importer="recall_kit_bm25.retriever", imported="recall_kit.measure.systems.system", line_number=1,
                     line_contents="from recall_kit.measure.systems.system import build_system")
    assert not contract.check(graph, verbose=False).kept


def _host_modules() -> set[str]:
    """recall_kit's own modules and sub-packages, one level down."""
    host = {f"recall_kit.{path.stem}" for path in (ROOT / "recall_kit").glob("*.py") if path.stem != "__init__"}
    return host | {f"recall_kit.{path.parent.name}" for path in (ROOT / "recall_kit").glob("*/__init__.py")}


def _deep_imports(source: str, allowed: set[str]) -> list[tuple[int, str]]:
    """(line, module) for each import of recall-kit from outside `allowed` (an import-linter
    contract cannot see test folders and templates, which are not packages)."""
    import ast

    host = _host_modules()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from recall_kit import registry` imports a module too.
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            names = [name for name in names if name == node.module or name in host]
        else:
            continue
        found += [(node.lineno, name) for name in names
                  if (name == "recall_kit" or name.startswith("recall_kit.")) and name not in allowed]
    return found


def test_plugin_tests_and_the_scaffold_templates_import_only_the_api():
    files = [*ROOT.glob("plugins/recall-kit-*/tests/*.py"), *ROOT.glob("examples/recall-kit-*/tests/*.py"),
             *(ROOT / "recall_kit" / "templates").rglob("*.py")]
    assert len(files) > 30
    found = [f"{path.relative_to(ROOT)}:{line} {name}" for path in files
             for line, name in _deep_imports(path.read_text(encoding="utf-8"), TEST_API)]
    assert found == []


#: What a plugin's own code (not its tests) imports from recall-kit: the one front door.
PLUGIN_CODE_API = {"recall_kit.plugin"}


def _plugin_code_files() -> list[Path]:
    """Every bundled plugin's package code, and the scaffold's plugin modules (not their tests)."""
    return sorted([*ROOT.glob("plugins/recall-kit-*/recall_kit_*/**/*.py"),
                   *ROOT.glob("examples/recall-kit-*/recall_kit_*/**/*.py"),
                   *(path for path in (ROOT / "recall_kit" / "templates").rglob("*.py")
                     if not path.stem.endswith("_tests"))])


def test_plugin_code_imports_only_recall_kit_plugin():
    files = _plugin_code_files()
    assert len(files) > 40
    found = [f"{path.relative_to(ROOT)}:{line} {name}" for path in files
             for line, name in _deep_imports(path.read_text(encoding="utf-8"), PLUGIN_CODE_API)]
    assert found == []
    assert _deep_imports("import recall_kit\nfrom recall_kit import Hit\n", PLUGIN_CODE_API) == [
        (1, "recall_kit"), (2, "recall_kit")]


def _register_annotations(source: str) -> list[tuple[int, str]]:
    """(line, annotation) of each recall-kit `register_*` hook implementation whose `register`
    parameter is not annotated `Register`. Another host's hooks (`@llm.hookimpl`: the llm plugin's
    local model registers with llm) take that host's callback."""
    import ast

    def ours(decorator: ast.expr) -> bool:
        written = ast.unparse(decorator)
        return ("hookimpl" in written or "hookspec" in written) and not written.startswith("llm.")

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("register_") and any(
                ours(d) for d in node.decorator_list):
            params = [arg for arg in node.args.args if arg.arg == "register"]
            for param in params:
                written = ast.unparse(param.annotation) if param.annotation is not None else "(none)"
                if written != "Register":
                    found.append((node.lineno, written))
    return found


def test_every_register_hook_takes_the_declared_register_type():
    files = [*_plugin_code_files(), *(ROOT / "recall_kit" / "default_plugins").glob("*.py"),
             ROOT / "recall_kit" / "hookspecs.py"]
    found = [f"{path.relative_to(ROOT)}:{line} {written}" for path in files
             for line, written in _register_annotations(path.read_text(encoding="utf-8"))]
    assert found == []
    planted = ("@hookimpl\ndef register_retrievers(register: Any) -> None: ...\n"
               "@recall_kit.hookimpl(optionalhook=True)\ndef register_fusions(register): ...\n"
               "@hookspec\ndef register_things(register: Callable[[str, Any], None]) -> None: ...\n"
               "@llm.hookimpl\ndef register_models(register: Any) -> None: ...\n")
    assert _register_annotations(planted) == [(2, "Any"), (4, "(none)"), (6, "Callable[[str, Any], None]")]


def test_the_plugin_guide_imports_only_the_api():
    import re

    text = (ROOT / "docs" / "plugin-guide.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) >= 5
    assert [found for block in blocks for found in _deep_imports(block, TEST_API)] == []


def test_the_source_check_catches_a_deep_import():
    source = "from recall_kit import registry, Hit\nimport recall_kit.measure.systems.system\nfrom recall_kit.testing import x\n"
    assert _deep_imports(source, TEST_API) == [(1, "recall_kit.registry"), (2, "recall_kit.measure.systems.system")]


def test_every_path_the_architecture_map_names_exists():
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paths = [path for path in re.findall(r"`((?:recall_kit|plugins|examples)/[^`<*{]+)`", text)]
    assert len(paths) > 20
    assert [path for path in paths if not (ROOT / path).exists()] == []


def _defined_functions() -> tuple[dict[str, list[tuple[list[str], set[str]]]], set[str]]:
    """Every function and method defined in the repository's Python (recall_kit/, plugins/, tests/,
    benchmarks/), by name and by `Class.name`: the parameter names of each definition (self and
    cls left out) and those without a default; and every class name."""
    import ast

    functions: dict[str, list[tuple[list[str], set[str]]]] = {}
    classes: set[str] = set()
    for folder in ("recall_kit", "plugins", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    classes.add(node.name)
                    owned = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
                    for item in owned:
                        functions.setdefault(f"{node.name}.{item.name}", []).append(_parameters(item))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.setdefault(node.name, []).append(_parameters(node))
    return functions, classes


def _parameters(node: object) -> tuple[list[str], set[str]]:
    arguments = node.args  # type: ignore[attr-defined]
    positional = [*arguments.posonlyargs, *arguments.args]
    required = {a.arg for a in positional[:len(positional) - len(arguments.defaults)]}
    required |= {a.arg for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if default is None}
    names = [a.arg for a in [*positional, *arguments.kwonlyargs]]
    return [name for name in names if name not in ("self", "cls")], required - {"self", "cls"}


def _call_mismatches(text: str, functions: dict[str, list[tuple[list[str], set[str]]]], classes: set[str]) -> list[str]:
    """Each `name(arguments)` the text shows whose function (or class) is not defined, or whose every
    definition lacks a parameter the text names, takes them in another order or needs one the text
    leaves out (`name()` only names the function; `...` stands for the rest)."""
    import re

    wrong = []
    for name, shown in re.findall(r"`([A-Za-z_][\w.]*)\(([^`()]*)\)`", text):
        parts = name.split(".")
        key = ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]
        wanted = [argument.split("=")[0].strip() for argument in shown.split(",")
                  if argument.strip() and argument.strip() not in ("...", "*")]
        if key[:1].isupper() and key in classes and not wanted:
            continue  # a class made with its own fields: `IndexCost(...)`
        signatures = functions.get(key, [])
        complete = bool(wanted) and all(argument.strip() != "..." for argument in shown.split(","))
        if not any([p for p in params if p in wanted] == wanted and not (complete and required - set(wanted))
                   for params, required in signatures):
            wrong.append(f"{name}({shown})" + ("" if signatures else ": not defined"))
    return wrong


def test_every_function_the_architecture_map_names_exists_with_those_parameters():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    functions, classes = _defined_functions()
    assert _call_mismatches(text, functions, classes) == []
    # Not vacuous: a renamed function, a parameter the code lacks, and two given out of order fail.
    # So does a signature that leaves out a parameter the function needs (the map's old `run_system(system,
    # dataset, depth=...)`, before it took `settings`).
    planted = "`search_depth(system, dataset, k)` `seach_depth(system)` `run_system(system, dataset, settings, depth=...)` " \
              "`search_depth(k, system)` `run_system(system, dataset, hops=...)` `IndexCost(...)` " \
              "`run_system(system, dataset, depth=...)` `steps()` `LegIndexCost.of(...)`"
    assert _call_mismatches(planted, functions, classes) == [
        "seach_depth(system): not defined", "search_depth(k, system)", "run_system(system, dataset, hops=...)",
        "run_system(system, dataset, depth=...)"]


# -- modules of one concern: no function over MAX_FUNCTION_LINES ---------------------------------

#: The longest a function (or method) in recall_kit/ may be, decorators and docstring included.
MAX_FUNCTION_LINES = 80


def _long_functions(source: str, where: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`where:line name (N lines)` for each function in `source` longer than `limit` lines."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > limit:
                found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_the_package_is_over_80_lines():
    files = sorted((ROOT / "recall_kit").rglob("*.py"))
    assert len(files) > 50
    found = [entry for path in files
             for entry in _long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == [], "split these into named helpers: " + "; ".join(found)


def test_the_length_check_catches_a_long_function():
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    source = f"@decorator\ndef long():\n{body}\n\ndef short():\n    pass\n"
    # decorator + def + 79 statements = 81 lines: over; the same at a limit of 81 is not.
    assert _long_functions(source, "m.py") == ["m.py:2 long (81 lines)"]
    assert _long_functions(source, "m.py", limit=81) == []


# -- reading a result means attributes: no raw result-key read outside result.py -------------------
# A chain of subscripts and `.get("key")` calls is followed back to its root through the names it was
# bound to (`data = json.loads(...)`, `for query in data["queries"]`, `latency = result.latency`), and
# its string keys are matched against paths only the result document (schema recall-kit/result/1)
# has. A root reached through an attribute counts as a key marked with a dot (`.manifest`).
_ANY = None
_RESULT_PATHS: list[tuple[object, ...]] = [
    ("metrics", {"overall", "strata", "names", "relevance_level", "judged_only"}),
    ({"latency_ms", "throughput", "manifest", "wall_seconds", "k_requested", "attribution_depth",
      "empty_rankings", "outside_corpus"},),
    ("index", {"legs", "build_seconds", "size_bytes"}),
    ("system", {"legs", "label", "spec", "weights"}),  # not "fusion": a config's [system] has one
    ("dataset", {"fingerprint", "corpus_fingerprint", "memories", "dropped_sensitive", "path", "name", "strata"}),
    ("queries", _ANY, {"metrics", "ranking", "scores", "found_by", "latency_ms", "stratum", "scope", "query_id"}),
    ({"relevant_in_top_k", "relevant_only_this_leg", "relevant_pushed_out", "unique_in_top_k"},),
    # The typed result's attributes (the sections were dicts once; overall and strata held "n").
    ({".manifest", ".latency", ".throughput"}, _ANY),
    (".index", {"legs", "build_seconds", "size_bytes"}),
    (".system", {"legs", "fusion", "label", "spec", "weights"}),
    (".dataset", {"fingerprint", "corpus_fingerprint", "memories", "dropped_sensitive", "path", "name", "strata"}),
    (".overall", "n"),
    (".strata", _ANY, "n"),
]
#: Files that check the on-disk format itself, and so read the document's keys on purpose.
RAW_RESULT_READS_ALLOWED = {
    "recall_kit/measure/result.py",  # the one module that knows the keys (with its sections)
    "recall_kit/measure/result_sections.py",
    "tests/measure/test_result.py",  # the schema's own tests: round trips, damaged files, "n" kept on disk
}


def _matches(chain: tuple[object, ...]) -> bool:
    def fits(key: object, want: object) -> bool:
        return want is _ANY or key == want or (isinstance(want, set) and key in want)

    return any(all(fits(key, want) for key, want in zip(chain[start:start + len(path)], path, strict=True))
               for path in _RESULT_PATHS for start in range(len(chain) - len(path) + 1))


def _raw_result_reads(source: str) -> list[int]:
    """The lines of `source` that read a result document's keys (or the old dict sections)."""
    import ast

    def key_of(node: ast.AST) -> object:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else _ANY

    class Scan(ast.NodeVisitor):
        def __init__(self) -> None:
            self.bound: list[dict[str, tuple[object, ...]]] = [{}]
            self.lines: set[int] = set()
            self.written: set[int] = set()

        def chain(self, node: ast.AST) -> tuple[object, ...]:
            if isinstance(node, ast.Subscript):
                return (*self.chain(node.value), key_of(node.slice))
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args):
                return (*self.chain(node.func.value), key_of(node.args[0]))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "items", "values", "keys"):
                return self.chain(node.func.value)
            if isinstance(node, ast.Attribute):
                return (f".{node.attr}",)
            if isinstance(node, ast.Name):
                return self.bound[-1].get(node.id, ())
            return ()

        def check(self, node: ast.AST) -> None:
            if _matches(self.chain(node)):
                self.lines.add(node.lineno)

        def visit_Subscript(self, node: ast.Subscript) -> None:
            if isinstance(node.ctx, ast.Load) and id(node) not in self.written:
                self.check(node)
            self.generic_visit(node)

        def writes(self, targets: list[ast.expr]) -> None:
            """Damaging a document on purpose (`data["latency_ms"]["p95"] = -1`) writes, not reads."""
            for target in targets:
                while isinstance(target, ast.Subscript):
                    self.written.add(id(target))
                    target = target.value

        def visit_Call(self, node: ast.Call) -> None:
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
                self.check(node)
            self.generic_visit(node)

        def bind(self, target: ast.AST, value: ast.AST, element: bool) -> None:
            chain = self.chain(value)
            if isinstance(target, ast.Name):
                self.bound[-1][target.id] = (*chain, _ANY) if element and chain else chain
            elif isinstance(target, ast.Tuple) and element and len(target.elts) == 2:  # .items()
                if isinstance(target.elts[1], ast.Name):
                    self.bound[-1][target.elts[1].id] = (*chain, _ANY) if chain else ()

        def visit_Assign(self, node: ast.Assign) -> None:
            self.writes(node.targets)
            self.generic_visit(node)
            for target in node.targets:
                self.bind(target, node.value, element=False)

        def visit_For(self, node: ast.For) -> None:
            self.bind(node.target, node.iter, element=True)
            self.generic_visit(node)

        def visit_comprehension(self, node: ast.comprehension) -> None:
            self.bind(node.target, node.iter, element=True)
            self.generic_visit(node)

        def visit_ListComp(self, node: ast.AST) -> None:  # generators first: they bind the names
            for generator in node.generators:  # type: ignore[attr-defined]
                self.visit(generator)
            for field in ("elt", "key", "value"):
                if getattr(node, field, None) is not None:
                    self.visit(getattr(node, field))

        visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

        def visit_FunctionDef(self, node: ast.AST) -> None:
            self.bound.append(dict(self.bound[-1]))
            self.generic_visit(node)
            self.bound.pop()

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    scan = Scan()
    scan.visit(ast.parse(source))
    return sorted(scan.lines)


def _raw_result_reads_in(paths: list[Path]) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}" for path in paths
            if str(path.relative_to(ROOT)) not in RAW_RESULT_READS_ALLOWED
            for line in _raw_result_reads(path.read_text(encoding="utf-8"))]


def _python_files() -> list[Path]:
    return sorted([*(ROOT / "recall_kit").rglob("*.py"), *ROOT.glob("plugins/recall-kit-*/**/*.py"),
                   *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")])


def test_no_raw_result_key_read_outside_the_result_module():
    files = _python_files()
    assert len(files) > 150
    assert _raw_result_reads_in(files) == []


def test_the_result_key_check_catches_raw_reads_and_spares_other_dicts():
    planted = '''
data = json.loads(path.read_text())
recall = data["metrics"]["overall"]["recall@5"]
for query in data["queries"]:
    print(query["metrics"]["mrr"])
p95 = result.latency.get("p95")
n = result.overall["n"]
legs = data["system"].get("legs")
ids = [q["query_id"] for q in data["queries"]]
size = report.data["index"]["size_bytes"]
data["latency_ms"]["p95"] = -1.0
'''
    assert _raw_result_reads(planted) == [3, 5, 6, 7, 8, 9, 10]
    spared = '''
row = {"name": "x", "metrics": 3}
print(row["name"], row["metrics"], config["system"]["retriever"], options.get("path"))
stats = index_stats(); print(stats["index"], lint["queries"], run.overall[name], result.mean("mrr"))
for name, leg in result.index.legs.items():
    print(leg.build_seconds, comparison["rows"][0]["system"])
'''
    assert _raw_result_reads(spared) == []


# -- writing a result means the typed sections: no result key written outside result.py -----------
# The runner, the dataset and the system build SystemInfo, DatasetInfo, LatencySummary, IndexCost,
# Throughput (result.py's `of` constructors); nobody writes the document's keys into a dict and
# parses it back. A dict literal (or `dict(...)`, or `x["key"] = ...`) holding a key that only the
# result document has, or a section's telltale pair of keys, is such a write.
RESULT_ONLY_KEYS = {
    "build_seconds", "size_bytes", "queries_per_second", "search_seconds", "fusion_seconds", "latency_ms",
    "wall_seconds", "k_requested", "attribution_depth", "empty_rankings", "corpus_fingerprint",
    "dropped_sensitive", "first_query_ms", "relevant_in_top_k", "relevant_only_this_leg",
    "relevant_pushed_out", "unique_in_top_k", "found_by",
}
#: Keys that together mark a section: the system's, a latency summary's.
RESULT_SECTION_KEYS = [{"spec", "legs"}, {"legs", "weights"}, {"p50", "p95", "p99"}]
#: Files that write the document on purpose: the module that owns it. (benchmarks/ write their own
#: documents, with some of the same names, and are not scanned.)
RESULT_WRITES_ALLOWED = {"recall_kit/measure/result.py", "recall_kit/measure/result_sections.py"}
#: Hook payloads whose keys are their own documented contract (hooks.md), not the result's.
HOOK_PAYLOADS = {"on_index_built"}


def _raw_result_writes(source: str) -> list[int]:
    """The lines of `source` that write a result document's keys into a dict."""
    import ast

    def flagged(keys: set[str]) -> bool:
        return bool(keys & RESULT_ONLY_KEYS) or any(section <= keys for section in RESULT_SECTION_KEYS)

    tree = ast.parse(source)
    payloads = {id(inner) for node in ast.walk(tree)
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in HOOK_PAYLOADS for inner in ast.walk(node)}
    lines = set()
    for node in ast.walk(tree):
        if id(node) in payloads:
            continue
        keys: set[str] = set()
        if isinstance(node, ast.Dict):
            keys = {key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys = {keyword.arg for keyword in node.keywords if keyword.arg}
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                keys = {node.slice.value} & RESULT_ONLY_KEYS
        if keys and flagged(keys):
            lines.add(node.lineno)
    return sorted(lines)


def test_no_result_key_written_outside_the_result_module():
    files = [path for path in sorted([*(ROOT / "recall_kit").rglob("*.py"),
                                      *ROOT.glob("plugins/recall-kit-*/recall_kit_*/**/*.py")])
             if str(path.relative_to(ROOT)) not in RESULT_WRITES_ALLOWED]
    assert len(files) > 100
    found = [f"{path.relative_to(ROOT)}:{line}" for path in files
             for line in _raw_result_writes(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_result_write_check_catches_dict_writes_and_spares_other_dicts():
    # The shapes the runner, dataset.py and system.py used before the sections were typed.
    planted = '''
index = {"build_seconds": round(total, 4), "size_bytes": size, "legs": {}}
throughput = dict(queries=n, queries_per_second=qps)
section = {"spec": spec.retriever, "label": label, "legs": [], "fusion": [], "weights": weights}
info = {"name": name, "corpus_fingerprint": corpus.fingerprint, "memories": len(corpus)}
latency["first_query_ms"] = round(first, 4)
stats = {"n": 3, "p50": 1.0, "p95": 2.0, "p99": 2.5}
call_each("on_build", {"stats": {"build_seconds": seconds}})
'''
    assert _raw_result_writes(planted) == [2, 3, 4, 5, 6, 7, 8]
    spared = '''
row = {"name": "x", "metrics": 3, "legs": 2}
config = {"system": {"retriever": "fts5"}, "weights": {"fts5": 1}}
stats = {"min": 1, "p50": 2, "mean": 2, "p95": 3, "max": 4}
value = data["build_seconds"]
call_each("on_index_built", {"leg": name, "stats": {"build_seconds": seconds, "size_bytes": size}})
'''
    assert _raw_result_writes(spared) == []


# -- a name comes from the module that defines it: not through the facade, never a private one -------
# `from recall_kit import load_dataset` inside the package hides a dependency from the layers contract
# (the facade sits on top of them, so every arrow through it looks downward); `from x import _name`
# reaches past a module's public face. recall_kit/__init__.py is the facade itself; the scaffold's
# templates are plugin code, which imports the declared API (see above).

#: Facade imports and private names imported across modules that are pending (none now): file -> the
#: names. Pending, not accepted: an entry is removed when its module imports from the defining one.
FACADE_IMPORTS_PENDING: dict[str, set[str]] = {}
PRIVATE_IMPORTS_PENDING: dict[str, set[str]] = {}
#: `import recall_kit` where a module reads the facade's own attribute, not a re-exported name.
BARE_FACADE_IMPORTS = {"recall_kit/cli/__init__.py"}  # `recall_kit.__version__` for --version


def _imports_past_the_front(source: str, module: str) -> list[tuple[str, str]]:
    """(kind, name) for each import in `source` (the module `module`, dotted) that takes a name
    through the facade ("facade"), imports the facade bare ("bare") or takes a private name
    (`_x`, not a dunder) from another module ("private"); function-level and type-only imports too."""
    import ast

    package = module.split(".") if module.endswith("__init__") else module.split(".")[:-1]
    package = [part for part in package if part != "__init__"]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [("bare", "recall_kit") for alias in node.names if alias.name == "recall_kit"]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            if target == "recall_kit":
                found += [("facade", alias.name) for alias in node.names]
            elif target.startswith("recall_kit."):
                found += [("private", alias.name) for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_through_the_facade_or_a_private_name():
    found = []
    for path in sorted((ROOT / "recall_kit").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where == "recall_kit/__init__.py" or where.startswith("recall_kit/templates/"):
            continue
        module = where.removesuffix(".py").replace("/", ".")
        for kind, name in _imports_past_the_front(path.read_text(encoding="utf-8"), module):
            pending = {"facade": FACADE_IMPORTS_PENDING, "private": PRIVATE_IMPORTS_PENDING}.get(kind, {})
            if name not in pending.get(where, set()) and not (kind == "bare" and where in BARE_FACADE_IMPORTS):
                found.append(f"{where}: {kind} {name}")
    assert found == [], "import each name from the module that defines it, and only public names: " + "; ".join(found)
    # The pending lists name only what is still there: an entry fixed is an entry removed.
    still = {(where, name) for where, names in [*FACADE_IMPORTS_PENDING.items(), *PRIVATE_IMPORTS_PENDING.items()]
             for name in names
             for _, taken in _imports_past_the_front((ROOT / where).read_text(encoding="utf-8"),
                                                     where.removesuffix(".py").replace("/", "."))
             if taken == name}
    listed = {(where, name) for table in (FACADE_IMPORTS_PENDING, PRIVATE_IMPORTS_PENDING)
              for where, names in table.items() for name in names}
    assert listed == still


def test_the_facade_check_catches_facade_relative_and_private_imports():
    planted = (
        "from recall_kit import load_dataset\n"
        "import recall_kit\n"
        "from recall_kit.dataset import _read_queries, __doc__, Dataset\n"
        "def f():\n"
        "    from .. import registry\n"
        "    from .result import _parsed\n"
        "    from . import runner\n"
    )
    assert _imports_past_the_front(planted, "recall_kit.measure.run.x") == [
        ("facade", "load_dataset"), ("bare", "recall_kit"), ("private", "_read_queries"),
        ("private", "_parsed"),
    ]
    # `from .. import registry` in recall_kit/measure/x.py is the facade; in a package's __init__, too.
    assert _imports_past_the_front("from .. import registry\n", "recall_kit.measure.x") == [("facade", "registry")]
    assert _imports_past_the_front("from . import registry\n", "recall_kit.__init__") == [("facade", "registry")]
    assert _imports_past_the_front("from .trec import TrecTable\n", "recall_kit.measure.score.evaluation") == []


# -- where the code lives ----------------------------------------------------------------------------


def _ignored_source_folders() -> list[str]:
    """Each folder holding a tracked file that `.gitignore` would match a new module in: a file added
    there would be silently left out of a commit (and out of ruff, and out of any tool that honours
    .gitignore), as `recall_kit/study/build/` was."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    folders = sorted({str(Path(name).parent) for name in tracked.decode().split("\0") if name})
    assert len(folders) > 20 and "recall_kit/study/pipeline" in folders
    return _check_ignore([f"{folder}/new_module.py" for folder in folders])


def _check_ignore(paths: list[str]) -> list[str]:
    import subprocess

    found = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(paths),
                           capture_output=True, text=True)
    assert found.returncode in (0, 1), found.stderr  # 1: none matched
    return found.stdout.split()


def test_no_tracked_source_folder_is_matched_by_an_ignore_rule():
    assert _ignored_source_folders() == []


def test_the_ignore_check_catches_a_folder_named_like_a_build_output():
    _ignored_source_folders()  # skips without git
    assert _check_ignore(["recall_kit/study/build/new_module.py", "recall_kit/study/pipeline/new_module.py"]) == [
        "recall_kit/study/build/new_module.py"]


#: What the study's build machinery (recall_kit/study/pipeline/) may import: itself and the bottom layers.
PIPELINE_MAY_IMPORT = ("recall_kit.study.pipeline", "recall_kit.errors", "recall_kit.fileio", "recall_kit.fingerprint",
                       "recall_kit.locking", "recall_kit.document_reader", "recall_kit.machine")


def _pipeline_imports_outside(source: str, module: str) -> list[str]:
    from recall_kit.study.pipeline.code import imported_names

    return sorted(name for name in imported_names(source, module, module.endswith("pipeline"))
                  if name.startswith("recall_kit") and not name.startswith(PIPELINE_MAY_IMPORT))


def test_the_study_pipeline_knows_nothing_of_retrieval():
    # docs/architecture.md: study/pipeline/ imports nothing of the study's steps, results or retrieval
    modules = sorted((ROOT / "recall_kit" / "study" / "pipeline").glob("*.py"))
    assert len(modules) >= 4
    found = {path.name: _pipeline_imports_outside(path.read_text(encoding="utf-8"),
                                                  f"recall_kit.study.pipeline.{path.stem}".removesuffix(".__init__"))
             for path in modules}
    assert {name: names for name, names in found.items() if names} == {}


def test_the_pipeline_check_catches_an_import_of_the_study_result():
    planted = "def f():\n    from recall_kit.study.result import from_json\n"
    assert _pipeline_imports_outside(planted, "recall_kit.study.pipeline.declare") == [
        "recall_kit.study.result", "recall_kit.study.result.from_json"]


def test_ci_runs_every_linter_before_the_tests():
    # .ci/run: `make lint` (ruff, mypy, import-linter's contracts) and then `make test`; a lint
    # failure stops CI before the tests (set -e). The npm server installs in the background
    # meanwhile, and its failure stops CI too (its status waited for before the tests).
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in script.splitlines() if line.strip().startswith("make ")]
    assert commands == ['make node-servers >"$node_log" 2>&1 &', "make lint", "make test"]
    assert "set -euo pipefail" in script
    assert 'if ! wait "$node_pid"; then' in script.split("\nmake lint\n", 1)[1].split("\nmake test", 1)[0]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nlint: ", 1)[1].split("\n\n", 1)[0]
    assert all(tool in recipe for tool in ("ruff check recall_kit plugins", "mypy recall_kit", "lint-imports"))
