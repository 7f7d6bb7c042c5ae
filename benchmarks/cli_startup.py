"""Start-up time of the commands a new user types first, against a bare interpreter.

    python benchmarks/cli_startup.py [--rounds 7]

Each command runs as its own process, the way a user starts it
(``python -m diffzoo ...``, which is what the ``diffzoo`` script does), with
its output discarded: ``--help``, ``--version``, ``list detectors``, ``list
suites`` and ``plugins``; the bare reference is ``python -c pass`` in the same
rounds.  Rounds are interleaved (the order rotating every round); printed are
the median seconds of each command, its median ratio to the bare
interpreter, and whether it imported torch (read in one more run that prints
``sys.modules``).  Goal: under 0.5 s for ``--help`` and ``list detectors``,
without torch.  A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from bench import MIN_ROUNDS, figure, interleaved, median_ratio, report, timed

COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "list detectors": ["list", "detectors"],
    "list suites": ["list", "suites"],
    "plugins": ["plugins"],
}
GOAL_S = 0.5
WITH_GOAL = ("--help", "list detectors")
PROBE = ("import sys, runpy; sys.argv = ['diffzoo', *sys.argv[1:]]\n"
         "try:\n    runpy.run_module('diffzoo', run_name='__main__')\n"
         "except SystemExit:\n    pass\n"
         "print('TORCH-IMPORTED' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)")


def run(args: list[str]) -> None:
    subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def imports_torch(args: list[str]) -> bool:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False)
    return "TORCH-IMPORTED" in done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help=f"interleaved rounds (at least {MIN_ROUNDS})")
    parser.add_argument("--quick", action="store_true", help="accepted for `python -m benchmarks --quick`; "
                        "the rounds stay")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    candidates = {"bare": lambda r: timed(lambda: run(["-c", "pass"]))}
    for name, argv in COMMANDS.items():
        candidates[name] = lambda r, argv=argv: timed(lambda: run(["-m", "diffzoo", *argv]))
    for fn in candidates.values():  # warm the page cache and .pyc files once
        fn(-1)
    times = interleaved(candidates, args.rounds)
    bare = statistics.median(times["bare"])
    print(f"bare interpreter (python -c pass): {bare:.3f} s")
    figures, rows = [], {}
    for name, argv in COMMANDS.items():
        seconds = statistics.median(times[name])
        ratio = median_ratio(times[name], times["bare"])
        torch = imports_torch(argv)
        rows[name] = {"seconds": seconds, "ratio_to_bare": ratio, "imports_torch": torch}
        print(f"diffzoo {name:<15} {seconds:6.3f} s  {ratio:5.1f}x bare  {'imports torch' if torch else 'no torch'}")
        figures.append(figure(f"diffzoo {name} (s)", seconds, f"<= {GOAL_S}" if name in WITH_GOAL else None, "s"))
        figures.append(figure(f"diffzoo {name} imports torch", int(torch), "<= 0" if name in WITH_GOAL else None))
    report({"benchmark": "cli_startup", "rounds": args.rounds, "bare_s": bare, "commands": rows,
            "figures": figures}, args.json)


if __name__ == "__main__":
    main()
