"""How far each offline judge agrees with LoCoMo's evidence labels: kappa (with its bootstrap
interval), sensitivity and specificity (Wilson intervals), per stratum, and the time per 1,000
pairs, each measured by the command a user runs:

    python benchmarks/bench_judges.py --locomo ../shared/data/locomo-dev.json

Steps: import LoCoMo dev without its adversarial questions (`recall-kit dataset import locomo ...
--adversarial false`: they carry no answer, so the answer judge cannot grade them); run `bm25`
with `eval`; for each judge, `recall-kit judge bm25.json -d DIR --judge NAME --calibrate --depth 5`:
every question's bm25 top 5 plus its evidence turns, labelled by the evidence (the issue's 4,514-pair
construction; here 4,517 pairs, see docs/models.md). The combined judge is cross-fitted over
questions (5 folds): no pair is graded by a model fitted on its label.

Bar (exit 1 when missed): at least one judge reaches kappa >= 0.6. Without --locomo (or when the
file is absent) it says so and exits 0. The llm judge (Gemma 3 270M) is not rerun: its kappa on
these pairs is -0.02 (docs/models.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: name shown -> (judge, its options): every registered offline judge, and the embedding judge's
#: two texts and the combined judge with the systems' ranks, measured the same way.
JUDGES: dict[str, tuple[str, list[str]]] = {
    "answer": ("answer", []),
    "embedding (question)": ("embedding", []),
    "embedding (answer)": ("embedding", ["-o", "embedding.against=answer"]),
    "combined": ("combined", []),
    "combined + ranks": ("combined", ["-o", "combined.signals=answer,question,similarity,ranks"]),
}
QUICK = ("answer",)


def recall_kit(*arguments: str) -> None:
    done = subprocess.run([sys.executable, "-m", "recall_kit", *arguments], check=False, cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"command failed ({done.returncode}): recall-kit {' '.join(arguments[:4])} ...")


def measure(work: Path, name: str, judge: str, options: list[str]) -> dict[str, object]:
    """One judge's calibration on the pooled sample, as `judge --calibrate --json` writes it."""
    stem = name.replace(" ", "_").replace("(", "").replace(")", "").replace("+", "plus")
    report = work / f"{stem}.json"
    recall_kit("judge", str(work / "bm25.json"), "-d", str(work / "locomo"), "--judge", judge, *options,
               "--calibrate", "--depth", "5", "--output", str(work / f"{stem}.qrels.jsonl"), "--json", str(report))
    return json.loads(report.read_text(encoding="utf-8"))


def row(name: str, found: dict[str, object]) -> str:
    """A markdown table row: judge, pairs, kappa [interval], sensitivity, specificity, s per 1,000 pairs."""
    overall = found["agreement"]["binary_against_a"]["all"]  # type: ignore[index]
    low, high = overall["kappa_ci"]
    return (f"| {name} | {overall['n']} | {overall['kappa']:.3f} [{low:.3f}, {high:.3f}] | "
            f"{overall['sensitivity']:.3f} | {overall['specificity']:.3f} | {found['seconds_per_1000_pairs']:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", help="LoCoMo JSON file (locomo10.json or its dev part)")
    parser.add_argument("--quick", action="store_true", help="the answer judge only")
    parser.add_argument("--json", help="write every judge's calibration here")
    args = parser.parse_args()
    if not args.locomo or not os.path.isfile(args.locomo):
        print("no LoCoMo file given (--locomo PATH): nothing measured")
        return 0
    names = [name for name in JUDGES if not args.quick or name in QUICK]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        recall_kit("dataset", "import", "locomo", args.locomo, str(work / "locomo"), "--adversarial", "false")
        recall_kit("eval", "-d", str(work / "locomo"), "-r", "bm25", "--json", str(work / "bm25.json"))
        found = {name: measure(work, name, *JUDGES[name]) for name in names}
    print("| judge | pairs | kappa [95% interval] | sensitivity | specificity | s per 1,000 pairs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        print(row(name, found[name]))
    print("\nper stratum (kappa / sensitivity / specificity):")
    for name in names:
        strata = found[name]["agreement"]["binary_against_a"]  # type: ignore[index]
        print(f"  {name}: " + "; ".join(f"{stratum} {m['kappa']:.2f} / {m['sensitivity']:.2f} / {m['specificity']:.2f}"
                                        for stratum, m in strata.items() if stratum != "all"))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1), encoding="utf-8")
    best = max(names, key=lambda name: found[name]["agreement"]["binary_against_a"]["all"]["kappa"])  # type: ignore[index]
    kappa = found[best]["agreement"]["binary_against_a"]["all"]["kappa"]  # type: ignore[index]
    ok = kappa >= 0.6
    print(f"BAR best offline judge's kappa ({best}): {kappa:.4g} (target >= 0.6) {'PASS' if ok else 'FAIL'}")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
