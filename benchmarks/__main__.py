"""Run every benchmark, write one JSON file and print one table.

    python -m benchmarks                          # all of them; suite_all alone takes ~15-20 min on 2 cores
    python -m benchmarks --skip suite_all         # the rest (a few minutes)
    python -m benchmarks --quick --skip suite_all # smoke run: smaller inputs, still 5 interleaved rounds
    python -m benchmarks --only eval_overhead,loader --json eval.json

Each benchmark runs as its own process, ``python benchmarks/<name>.py --json
<tmp> [--quick]`` (the scripts import ``bench`` from their folder), with its
output shown as it goes.  The JSON file (default ``benchmarks/results.json``)
holds the date, the machine (CPU count, load, torch version, git commit) and
every benchmark's own result; the table lists each figure with its goal and
whether it is met.  A failing benchmark is reported and the others still run.
Nothing is asserted: these are measurements, not tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import machine  # noqa: E402

BENCHMARKS = ("cli_startup", "eval_overhead", "loader", "generate_overhead", "train_overhead", "bf1", "metrics",
              "metrics_benco", "scaling", "suite_all")
"""In the order they run; each is ``benchmarks/<name>.py``."""


def names(spec: str | None, parser: argparse.ArgumentParser) -> list[str]:
    chosen = [n.strip() for n in spec.split(",") if n.strip()] if spec else []
    unknown = [n for n in chosen if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    return chosen


def run_one(name: str, quick: bool, tmp: Path) -> dict:
    out = tmp / f"{name}.json"
    command = [sys.executable, str(HERE / f"{name}.py"), "--json", str(out)] + (["--quick"] if quick else [])
    print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    rc = subprocess.run(command, cwd=HERE.parent).returncode
    wall = time.perf_counter() - start
    if rc != 0 or not out.is_file():
        return {"benchmark": name, "error": f"exit code {rc}", "wall_s": wall, "figures": []}
    result = json.loads(out.read_text())
    result["wall_s"] = wall
    return result


def value_text(row: dict) -> str:
    v = row["value"]
    if v is None:
        return "-"
    text = f"{v:.3f}" if isinstance(v, float) and abs(v) < 10 else f"{v:,.1f}" if isinstance(v, float) else str(v)
    return f"{text} {row.get('unit') or ''}".strip()


def table(results: dict[str, dict]) -> list[str]:
    from tabulate import tabulate

    rows = []
    for name, result in results.items():
        if "error" in result:
            rows.append((name, f"failed ({result['error']})", "-", "-", "-"))
        for row in result.get("figures", []):
            met = "-" if row["met"] is None else "yes" if row["met"] else "no"
            rows.append((name, row["figure"], value_text(row), row["goal"] or "-", met))
    return tabulate(rows, headers=("benchmark", "figure", "value", "goal", "met"), tablefmt="simple",
                    colalign=("left", "left", "right", "right", "right"), disable_numparse=True).split("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated benchmarks to run (default: all)")
    parser.add_argument("--skip", help="comma-separated benchmarks to leave out, e.g. suite_all")
    parser.add_argument("--quick", action="store_true", help="smaller inputs for a smoke run")
    parser.add_argument("--json", default=str(HERE / "results.json"),
                        help="output file (default benchmarks/results.json)")
    args = parser.parse_args()
    only, skip = names(args.only, parser), names(args.skip, parser)
    chosen = [n for n in (only or BENCHMARKS) if n not in skip]
    started = time.perf_counter()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in chosen:
            results[name] = run_one(name, args.quick, Path(tmp))
    summary = {**machine(), "quick": args.quick, "wall_s": time.perf_counter() - started,
               "benchmarks": results}
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nbenchmarks on {summary['date']}: {summary['cpus']} CPUs, torch {summary['torch']}, "
          f"commit {summary['git_commit']}{' (--quick)' if args.quick else ''}; written to {args.json}")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
