"""Wall time and model passes of ``diffzoo run --detector segformer --suite all`` on ``mini``.

    python benchmarks/suite_all.py                  # about 15-20 minutes on 2 cores
    python benchmarks/suite_all.py --detector segformer.tiny --suite standard --quick

Runs the command as a user would, in a subprocess, into a fresh ``--out``
folder and a fresh ``$DIFFZOO_CACHE`` whose ``datasets/`` is the user's
(so ``mini`` is built once and reused, while every model is trained and
every re-edit made as on a first run).  Prints the wall time, the model
passes and image reads the plan announces (its ``N model pass(es), M image
reads`` lines, summed), the models trained, and the run's own last line.
``--quick`` gives the run ``--bootstrap 0``.  A benchmark, not a test:
nothing is asserted (a failing run is reported with its exit code).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import figure, report

from diffzoo.harness.core.fsutil import cache_root

PASSES = re.compile(r"(\d+) model pass\(es\), (\d+) image reads")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detector", default="segformer")
    parser.add_argument("--suite", default="all")
    parser.add_argument("--dataset", default="mini")
    parser.add_argument("--quick", action="store_true", help="no bootstrap CIs (--bootstrap 0)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        shared = cache_root() / "datasets"
        shared.mkdir(parents=True, exist_ok=True)
        (cache / "datasets").symlink_to(shared, target_is_directory=True)
        command = [sys.executable, "-m", "diffzoo", "run", "--detector", args.detector, "--suite", args.suite,
                   "--dataset", args.dataset, "--out", str(Path(tmp) / "out")]
        if args.quick:
            command += ["--bootstrap", "0"]
        env = {**os.environ, "DIFFZOO_CACHE": str(cache), "COLUMNS": "400", "HF_HUB_OFFLINE": "1"}
        print("running: " + " ".join(command[1:]) + f"  (DIFFZOO_CACHE={cache}, datasets/ shared)", flush=True)
        start = time.perf_counter()
        lines: list[str] = []
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              cwd=tmp) as proc:
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if PASSES.search(line) or line.startswith(("training ", "building dataset", "error")):
                    print("  | " + line.rstrip()[:200], flush=True)
        wall = time.perf_counter() - start
    counts = [tuple(map(int, m.groups())) for m in map(PASSES.search, lines) if m]
    passes, reads = sum(c[0] for c in counts), sum(c[1] for c in counts)
    # distinct "training NAME [task] on DATA/train ..." progress lines (one model, many lines)
    trained = len({line.split("  ")[0] for line in lines if re.match(r"training \S+ \[", line)})
    built = any(line.startswith("building dataset") for line in lines)
    last = next((line for line in reversed(lines) if line.strip()), "")
    results = {"benchmark": "suite_all", "command": " ".join(command[1:]), "returncode": proc.returncode,
               "wall_s": wall, "model_passes": passes, "image_reads": reads, "models_planned": len(counts),
               "models_trained": trained, "dataset_built": built, "last_line": last,
               "output_tail": lines[-30:],
               "figures": [figure("wall time", wall, unit="s"), figure("model passes (plan)", passes),
                           figure("image reads (plan)", reads),
                           figure("models trained", trained)]}
    print(f"diffzoo run --suite {args.suite} on {args.dataset}: exit code {proc.returncode}, wall {wall:.0f} s "
          f"({wall / 60:.1f} min){' including the dataset build' if built else ''}; {passes} model passes and "
          f"{reads} image reads planned over {len(counts)} model(s)")
    print(f"  last line: {last[:200]}")
    report(results, args.json)


if __name__ == "__main__":
    main()
