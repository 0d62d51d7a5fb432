"""Write deploy/constraints.txt: the exact installed version of every package the image installs.

Run with the Python of an environment where lowdens-dask is installed with the image's integrations (the test
environment: ``pip install -e '.[test]'``), after ``pip check`` passes there:

    python deploy/update_constraints.py

The pins are lowdens-dask's requirements (pyproject.toml, with their extras) and the Dockerfile's integrations
(``INTEGRATIONS``), followed through every requirement that applies on this platform, at the installed versions.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DEPLOY = Path(__file__).resolve().parent
#: Installed by deploy/Dockerfile next to the package (s3fs: the default STORAGE_PACKAGES).
INTEGRATIONS = ["dask-kubernetes", "prefect-kubernetes", "s3fs"]

HEADER = """\
# Exact versions of everything the image installs (deploy/Dockerfile: `pip install -c deploy/constraints.txt`):
# lowdens-dask's dependencies (pyproject.toml), dask-kubernetes, prefect-kubernetes and s3fs, with all that they
# require, as installed together in the environment where the tests pass (Python 3.11, Linux; `pip check` clean).
# Regenerate after changing pyproject.toml or upgrading that environment:
#   python deploy/update_constraints.py
# Packages not listed here (another STORAGE_PACKAGES, e.g. gcsfs) are resolved freely, within these pins.
"""


def pins(roots: list[str]) -> dict[str, str]:
    """Installed version of every distribution the requirements ``roots`` need, by canonical name."""
    found: dict[str, str] = {}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [Requirement(root) for root in roots]
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(req.name)  # PackageNotFoundError: not installed here
        found[key[0]] = dist.version
        environments = [{"extra": extra} for extra in req.extras] or [{"extra": ""}]
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate(env) for env in environments):
                todo.append(sub)
    return found


def main() -> None:
    found = pins(["lowdens-dask", *INTEGRATIONS])
    found.pop("lowdens-dask")
    text = HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(found.items()))
    (DEPLOY / "constraints.txt").write_text(text)
    print(f"{len(found)} pins written to {DEPLOY / 'constraints.txt'}", file=sys.stderr)


if __name__ == "__main__":
    main()
