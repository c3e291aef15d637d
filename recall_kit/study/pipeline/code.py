"""The code a step runs, fingerprinted: a module and every module of its own package that it imports,
followed through the import statements themselves (never a list kept by hand).

A step whose output depends on how the code renders it (the document) puts `code_hash` of the module
that makes it among its inputs: an edit to any module it reaches makes the step stale, whatever the
package's version says. Imports inside functions count (they run when the function does); those under
`if TYPE_CHECKING:` do not (they run nothing).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path


def package_folder(module: str) -> Path:
    """The folder that holds `module`'s top-level package (the `sys.path` entry it is imported from)."""
    spec = importlib.util.find_spec(module.partition(".")[0])
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module)
    return Path(spec.origin).parent.parent


def module_file(name: str, folder: Path) -> Path | None:
    """`name`'s source file under `folder` (a module or a package's `__init__.py`); None when it has none."""
    base = os.path.join(folder, *name.split("."))
    for path in (f"{base}.py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return Path(path)
    return None


#: An import statement: `from X import NAMES` (NAMES in parentheses may span lines) or `import X, Y`.
_IMPORT = re.compile(r"^([ \t]*)(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]*))",
                     re.MULTILINE)
_GUARD = re.compile(r"^([ \t]*)if[ \t]+(?:typing\.)?TYPE_CHECKING[ \t]*:[ \t]*(?:#.*)?$", re.MULTILINE)


def imported_names(source: str, name: str, is_package: bool) -> set[str]:
    """Every module name the source of module `name` imports, at any depth but under `if TYPE_CHECKING:`;
    `from a import b` names both `a` and `a.b` (b may be a module). Read line by line, not parsed
    (a parse of every module the document reaches took seconds): a line of a docstring that reads
    as an import can only add a module, never hide one (tests/study/pipeline/test_code.py checks
    the names against `ast`'s for every module of recall_kit)."""
    guarded = [_block(source, match.end(), len(match.group(1))) for match in _GUARD.finditer(source)]
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for match in _IMPORT.finditer(source):
        _, module, names, plain = match.groups()
        if any(start <= match.start() < end for start, end in guarded):
            continue
        if plain is not None:
            found.update(part.split()[0] for part in plain.split(",") if part.strip())
            continue
        dots = len(module) - len(module.lstrip("."))
        base = module[dots:]
        if dots:
            parent = package.split(".")[:len(package.split(".")) - dots + 1]
            base = ".".join([*parent, *([base] if base else [])])
        found.add(base)
        listed = re.sub(r"#[^\n]*", "", names).strip("()")
        found.update(f"{base}.{part.split()[0]}" for part in listed.split(",") if part.strip())
    return found


def _block(source: str, start: int, depth: int) -> tuple[int, int]:
    """The offsets of the block that starts after `start` (the end of its `if ...:` line): the lines
    indented deeper than `depth`, blank lines and comments among them."""
    lines = source[start:].splitlines(keepends=True)
    end = start + (len(lines[0]) if lines else 0)
    for line in lines[1:]:
        if line.strip() and not line.lstrip().startswith("#") and len(line) - len(line.lstrip()) <= depth:
            break
        end += len(line)
    return start, end


def module_closure(module: str, folder: Path | None = None) -> dict[str, Path]:
    """`module` and every module of its top-level package it reaches through imports, with the
    packages each sits in (their `__init__.py` runs first): name -> source file, under `folder`
    (default: where the package is imported from)."""
    folder = package_folder(module) if folder is None else folder
    top = module.partition(".")[0]
    found: dict[str, Path] = {}
    seen: set[str] = set()
    waiting = [module]
    while waiting:
        name = waiting.pop()
        if name in seen or (name != top and not name.startswith(f"{top}.")):
            continue
        seen.add(name)
        path = module_file(name, folder)
        if path is None:
            continue  # a name imported from a module, not a module
        found[name] = path
        parts = name.split(".")
        waiting += [".".join(parts[:end]) for end in range(1, len(parts))]
        waiting += imported_names(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
    return dict(sorted(found.items()))


def code_hash(module: str, folder: Path | None = None) -> str:
    """A sha256 over the sources of `module_closure(module)`, each with its module name: an edit to any
    of them, a module added to the imports or one moved changes it."""
    digest = hashlib.sha256()
    for name, path in module_closure(module, folder).items():
        source = path.read_bytes()
        digest.update(f"{name}\0{len(source)}\0".encode())
        digest.update(source)
    return digest.hexdigest()
