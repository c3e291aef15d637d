"""Count the module transitions along the path a system takes through recall-kit for one run
(issue 25, "a straight path for one run").

A stop is the module control is in, following the calls that carry the system (a SystemSpec,
System or Leg among their arguments, directly or in a container or an executor task) inside the
host package recall_kit/. A calling context met again (the same chain of functions: a loop over
queries, scopes, legs, variants) is counted once. Entering a callee's module and coming back to
the caller's are both stops; consecutive stops in one module are one; a return is a stop in a
module already left. Run from the repository root (fts5, bm25 and fusion installed):

    python benchmarks/trace_path.py ablate|eval|sweep
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections import Counter
from typing import Any

import recall_kit
from recall_kit.measure.systems import system as system_module

ROOT = os.path.dirname(recall_kit.__file__) + os.sep
CARRIERS = (system_module.SystemSpec, system_module.System, system_module.Leg)


def carries(value: Any, depth: int = 0) -> bool:
    """Whether `value` is or holds (three levels deep at most) a spec, a system or a leg."""
    if isinstance(value, CARRIERS):
        return True
    if depth >= 3:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(carries(v, depth + 1) for v in list(value)[:50])
    if isinstance(value, dict):
        return any(carries(v, depth + 1) for v in list(value.values())[:50])
    if isinstance(value, functools.partial):
        return any(carries(v, depth + 1) for v in value.args)
    if dataclasses.is_dataclass(value) and type(value).__name__ == "Task":
        return carries(value.args, depth + 1)
    return False


def module_of(path: str) -> str | None:
    if not path.startswith(ROOT):
        return None
    return path[len(ROOT):].removesuffix(".py").replace(os.sep, ".")


class Tracer:
    def __init__(self) -> None:
        self.sequence: list[str] = []  # the modules control is in, in order
        self.seen: set[tuple[str, ...]] = set()
        # Per Python frame: ("node", module, context), ("pass", None, context) or ("skip", None, ()).
        self.stack: list[tuple[str, str | None, tuple[str, ...]]] = []

    def parent(self) -> tuple[str, str | None, tuple[str, ...]] | None:
        return next((entry for entry in reversed(self.stack) if entry[0] == "node"), None)

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.call(frame)
        elif event == "return" and self.stack:
            kind, _, _ = self.stack.pop()
            parent = self.parent()
            if kind == "node" and parent is not None and self.sequence[-1] != parent[1]:
                self.sequence.append(str(parent[1]))

    def call(self, frame: Any) -> None:
        if self.stack and self.stack[-1][0] == "skip":
            self.stack.append(("skip", None, ()))
            return
        module = module_of(frame.f_code.co_filename)
        parent = self.parent()
        context = parent[2] if parent else ()
        if module is None or not any(carries(v) for v in frame.f_locals.values()):
            self.stack.append(("pass", None, context))
            return
        context = context + (f"{module}:{frame.f_code.co_qualname}",)
        if context in self.seen:
            self.stack.append(("skip", None, ()))
            return
        self.seen.add(context)
        if not self.sequence or self.sequence[-1] != module:
            self.sequence.append(module)
        self.stack.append(("node", module, context))


def one_run(which: str) -> None:
    from recall_kit import load_dataset
    from recall_kit.measure.systems.system import SystemSpec

    dataset = load_dataset("examples/memories")
    spec = SystemSpec("fts5+bm25", ["rrf"])
    if which == "ablate":
        from recall_kit.decide.ablate import run_ablation

        run_ablation(spec, dataset, k=10, metrics=["recall@5"], n_resamples=10, latency_sample=2, show_progress=False)
    elif which == "eval":
        from recall_kit.measure.run.runner import run_benchmark

        run_benchmark(spec, dataset, k=10, metrics=["recall@5"], latency_sample=2, show_progress=False)
    elif which == "sweep":
        from recall_kit.decide.sweep import run_sweep

        run_sweep(spec, dataset, grid=["rrf.k=10,60"], target="recall@5", k=10, metrics=["recall@5"],
                  latency_sample=2, show_progress=False)
    else:
        raise SystemExit(f"usage: {sys.argv[0]} ablate|eval|sweep")


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "ablate"
    tracer = Tracer()
    sys.setprofile(tracer)
    try:
        one_run(which)
    finally:
        sys.setprofile(None)
    sequence = tracer.sequence
    returns = sum(1 for i, module in enumerate(sequence) if module in sequence[:i])
    print(f"{which}: {len(sequence)} stops in {len(set(sequence))} modules, {returns} returns to a module already left")
    print("  stops per module:", dict(Counter(sequence).most_common()))
    print("  path:", " > ".join(module.split(".")[-1] for module in sequence))


if __name__ == "__main__":
    main()
