"""The long profile of the property-based tests (``test_properties.py`` under tests/), as a benchmark-style run.

    python tools/fuzz.py --examples 1000

Runs every property test with ``LOWDENS_FUZZ_PROFILE=long`` (random, not derandomised) and prints a
markdown tables: examples per property test, failures, and the rate at which permuting the rows kept
the partition.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The property tests, wherever tests/ keeps them.
PROPERTIES = next(iter(sorted((ROOT / "tests").rglob("test_properties.py"))), ROOT / "tests" / "test_properties.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=1000, help="examples per property test")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "permutations.tsv"
        env = {
            **os.environ,
            "LOWDENS_FUZZ_PROFILE": "long",
            "LOWDENS_FUZZ_EXAMPLES": str(args.examples),
            "LOWDENS_FUZZ_REPORT": str(report),
        }
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics"]
        cmd += ["-n", str(args.workers), str(PROPERTIES)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        rates = {}
        if report.exists():
            for line in report.read_text().splitlines():
                name, kind, same, total = line.split("\t")
                rates[name, kind] = (int(same), int(total))
    stats = re.findall(
        r"test_properties\.py::test_fit_properties\[(\w+)-(\w+)\]:\s*\n(?:.*\n)*?\s+- (\d+) passing, (\d+) failing, "
        r"and (\d+) invalid",
        proc.stdout,
    )
    print(f"Long profile: {args.examples} examples per test, {elapsed:.0f} s, pytest exit code {proc.returncode}.\n")
    print("`test_fit_properties` (every property but permutation), per estimator:\n")
    print("| method | estimator | passing examples | failing | invalid (rejected by hypothesis) |")
    print("|---|---|---|---|---|")
    for name, kind, passing, failing, invalid in stats:
        print(f"| {name} | {kind} | {passing} | {failing} | {invalid} |")
    print("\n`test_permuted_rows_give_the_same_partition`: fits whose rows, permuted, gave the same partition:\n")
    print("| method | estimator | same partition | rate |")
    print("|---|---|---|---|")
    for (name, kind), (same, total) in sorted(rates.items()):
        print(f"| {name} | {kind} | {same}/{total} | {same / max(total, 1):.1%} |")
    if proc.returncode:
        print("\n```\n" + proc.stdout[-4000:] + "\n```")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
