"""The long profile of the property-based tests (tests/test_properties.py), as a benchmark-style run.

    python benchmarks/fuzz.py --examples 1000

Runs every property test with ``LOWDENS_FUZZ_PROFILE=long`` (random, not derandomised) and prints a
markdown table: examples per property test, failures, and the rate at which permuting the rows kept the
partition.
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
        cmd += ["-n", str(args.workers), str(ROOT / "tests" / "test_properties.py")]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        rates = {}
        if report.exists():
            for line in report.read_text().splitlines():
                name, kind, same, total = line.split("\t")
                rates[name, kind] = (int(same), int(total))
    stats = re.findall(
        r"test_properties\.py::(\w+)\[(\w+)-(\w+)\]:\s*\n(?:.*\n)*?\s+- (\d+) passing, (\d+) failing, and (\d+) invalid",
        proc.stdout,
    )
    print(f"Long profile: {args.examples} examples per test, {elapsed:.0f} s, pytest exit code {proc.returncode}.\n")
    print("| property test | method | estimator | passing examples | failing | invalid | permutation kept |")
    print("|---|---|---|---|---|---|---|")
    for test, name, kind, passing, failing, invalid in stats:
        kept = ""
        if test.startswith("test_permuted") and (name, kind) in rates:
            same, total = rates[name, kind]
            kept = f"{same}/{total} ({same / max(total, 1):.1%})"
        print(f"| {test} | {name} | {kind} | {passing} | {failing} | {invalid} | {kept} |")
    if proc.returncode:
        print("\n```\n" + proc.stdout[-4000:] + "\n```")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
