"""The engine's speed against another commit, side by side in one run:
``python -m bench.versus <commit> [instructions] [rounds]``.

Checks the commit out into a temporary git worktree, then alternates between the two
trees (each round: one fresh process per tree, warm numba cache, the same vector-add
program of about ``instructions`` instructions on 910B2, all 48 AIVs) and prints the
median instructions per second of the event loop (``execute``) and of the whole ``run``
for each, and their ratio. Alternating keeps a noisy shared machine fair to both.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.engine import BENCH_CAP

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, time, statistics
import hardware_presets as hp
from bench.engine import program_of_size
from explorer.core.emulator.engine import execute, prepare, run
chip = hp.load("910B2")
program = program_of_size(chip, {n})
inp = prepare(program, chip)
run(program, chip)  # compile / load the cache
def best(fn):
    times = []
    for _ in range(3):
        t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
    return statistics.median(times)
print(json.dumps({{"n": len(program), "execute": best(lambda: execute(inp)),
                   "run": best(lambda: run(program, chip))}}))
"""


def probe(tree: Path, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(n=n)], cwd=tree, check=True,
                         capture_output=True, text=True,
                         env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin",
                              "EXPLORER_MAX_INSTRUCTIONS": str(BENCH_CAP)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(commit: str, n: int = 1_000_000, rounds: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "other"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), commit], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            samples = {"this": [], commit: []}
            for _ in range(rounds):
                samples["this"].append(probe(ROOT, n))
                samples[commit].append(probe(other, n))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT,
                           check=True, capture_output=True)
    rate = {}
    for name, runs in samples.items():
        count = runs[0]["n"]
        rate[name] = {k: count / statistics.median(r[k] for r in runs)
                      for k in ("execute", "run")}
        print(f"{name:>12}: {count:,} instructions; execute {rate[name]['execute'] / 1e6:.2f} "
              f"M/s, run {rate[name]['run'] / 1e6:.2f} M/s (medians of {rounds} rounds)")
    for key in ("execute", "run"):
        print(f"this / {commit} ({key}): {rate['this'][key] / rate[commit][key]:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
