"""The image starts warm and is reproducible (issue 35, item 4): the first demo in a fresh pod took 88 s against
41 s warm, as numba compiled the kernels in every pod.

Checked without a Docker daemon: deploy/Dockerfile is parsed (tests/system/test_deploy.py's parser) and must install every
package within the exact pins of deploy/constraints.txt, from a base image pinned by version, and compile the
kernels at build time into numba's cache in the image, with the settings the pods run with. The cache itself is
checked by running the warm-up command twice in a fresh ``NUMBA_CACHE_DIR``: the second process loads every kernel
it calls from the cache, compiles none, and takes a fraction of the first's time. The Helm commands of the READMEs
pin the Dask operator chart to the dask-kubernetes version of the constraints.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from test_deploy import DEPLOY, ROOT, dockerfile_instructions

CONSTRAINTS = DEPLOY / "constraints.txt"
#: The command the image runs to fill numba's cache.
WARMUP = "python -m lowdens_dask._warmup"
#: One line of the constraints file: an exact pin.
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.!+-]*)")


def constraint_pins() -> dict[str, str]:
    """The pins of deploy/constraints.txt by canonical name; every line that is not a comment is ``name==version``."""
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.fullmatch(line)
        assert match, f"not an exact pin in {CONSTRAINTS.name}: {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"{name} pinned twice"
        pins[name] = match[2]
    return pins


def arg_defaults() -> dict[str, str]:
    """The Dockerfile's ARG defaults."""
    defaults = {}
    for op, args in dockerfile_instructions():
        if op == "ARG" and "=" in args:
            name, value = args.split("=", 1)
            defaults[name.strip()] = shlex.split(value)[0] if value.strip() else ""
    return defaults


def image_env() -> dict[str, str]:
    """The environment the Dockerfile's ENV instructions set, ``${ARG}`` replaced by the ARG's default."""
    defaults, env = arg_defaults(), {}
    for op, args in dockerfile_instructions():
        if op == "ENV":
            for item in shlex.split(args):
                name, value = item.split("=", 1)
                env[name] = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m[1], defaults.get(m[1], "")), value)
    return env


def install_command() -> str:
    (install,) = [args for op, args in dockerfile_instructions() if op == "RUN" and "pip install" in args]
    return install


def installed_packages() -> list[str]:
    """What the image's pip call installs besides the package itself: the names it lists and the default of each
    ARG it expands."""
    words = install_command().split("&&")[0].split()[2:]  # after "pip install"
    defaults, names = arg_defaults(), []
    skip = False
    for word in words:
        if skip or word in ("-c", "--constraint"):
            skip = not skip
            continue
        if match := re.fullmatch(r"\$\{?(\w+)\}?", word):
            names += defaults.get(match[1], "").split()
        elif not word.startswith(("/", ".", "-")):
            names.append(word.strip("\"'"))
    return names


# ------------------------------------------------------------------------------------------------------ pins
def test_constraints_pin_everything_the_image_installs():
    pins = constraint_pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # Every runtime dependency of the package, at a version its requirement accepts ...
    for text in project["dependencies"]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in {CONSTRAINTS.name}"
        assert req.specifier.contains(pins[name], prereleases=True), (text, pins[name])
        # ... with the requirements of the extras it asks for (dask[array,dataframe]), as installed here.
        for extra in req.extras:
            for sub in metadata.distribution(req.name).requires or []:
                sub = Requirement(sub)
                if sub.marker is not None and sub.marker.evaluate({"extra": extra}):
                    assert canonicalize_name(sub.name) in pins, f"{sub.name} ({req.name}[{extra}]) is not pinned"
    # Every other package the image's pip call installs (the integrations, the default storage package), at a
    # version the test extra accepts where it lists the package.
    tested = {canonicalize_name(Requirement(t).name): Requirement(t) for t in project["optional-dependencies"]["test"]}
    others = installed_packages()
    assert {"dask-kubernetes", "prefect-kubernetes", "s3fs"} <= set(others), others
    for package in others:
        name = canonicalize_name(package)
        assert name in pins, f"{package} is not pinned in {CONSTRAINTS.name}"
        if name in tested:
            assert tested[name].specifier.contains(pins[name], prereleases=True), (tested[name], pins[name])
    assert "lowdens-dask" not in pins  # the package is installed from the build context


def test_dockerfile_installs_within_the_constraints_from_a_pinned_base():
    instructions = dockerfile_instructions()
    (base,) = [args for op, args in instructions if op == "FROM"]
    # A Python patch release (and Debian release, or a digest), not a moving "3.11-slim"
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base
    copies = [args.split() for op, args in instructions if op == "COPY"]
    copied = {source: args[-1] for args in copies for source in args[:-1] if not source.startswith("--")}
    assert "deploy/constraints.txt" in copied, "the constraints file is not copied into the image"
    destination = copied["deploy/constraints.txt"]
    if destination.endswith("/"):
        destination += "constraints.txt"
    install = install_command()
    assert re.search(rf"pip install (-c|--constraint) {re.escape(destination)}\s", install), install
    # The versions come from the constraints only: no version in the command, no version ARGs beside it.
    assert not re.search(r"[=<>~]=", install.split("&&")[0]), install
    assert not [name for name in arg_defaults() if name.endswith("_VERSION")]
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert not {"deploy", "deploy/constraints.txt", "*.txt"} & {line.strip().strip("/") for line in ignored}


# ------------------------------------------------------------------------------------------------ numba cache
def test_dockerfile_compiles_the_kernels_into_numbas_cache():
    instructions = dockerfile_instructions()
    env = image_env()
    # A fixed cache directory in the image, set for every process, outside /tmp (where pods often mount an
    # emptyDir, which would hide it) ...
    cache = env.get("NUMBA_CACHE_DIR", "")
    assert cache.startswith("/") and not cache.startswith("/tmp/"), cache
    # ... compiled for a fixed CPU, as numba keys its cache on the CPU name and features: a pod on a node with
    # another CPU than the build machine's finds the entries.
    assert env.get("NUMBA_CPU_NAME") and env.get("NUMBA_CPU_FEATURES") is not None, env
    ops = [op for op, _ in instructions]
    runs = [(i, args) for i, (op, args) in enumerate(instructions) if op == "RUN"]
    warmups = [i for i, args in runs if WARMUP in args]
    assert warmups, f"no RUN step runs {WARMUP}"
    warmup = warmups[-1]
    assert "--quick" not in instructions[warmup][1]
    (install,) = [i for i, args in runs if "pip install" in args]
    # After the install (numba keys the entries on the installed source files: path and modification time), and
    # nothing installs, copies or changes the NUMBA_ settings after it.
    assert install < warmup
    for op, args in instructions[warmup + 1 :]:
        assert op not in ("COPY", "ADD") and "pip install" not in args and "NUMBA_" not in args, (op, args)
    # As the user the pods run as, in a directory that user owns: numba uses a cache directory only if it can
    # write there (it adds what it compiles), else it compiles again in every process.
    users = [i for i, op in enumerate(ops) if op == "USER"]
    assert users and users[-1] < warmup
    uid = instructions[users[-1]][1].split(":")[0]
    assert any(uid in args and "NUMBA_CACHE_DIR" in args for i, args in runs if i < users[-1]), (
        f"the cache directory is not made for user {uid}"
    )
    assert importlib.util.find_spec("lowdens_dask._warmup") is not None


def run_warmup(cache_dir, env) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "lowdens_dask._warmup", "--quick", "--json"],
        check=False,
        cwd=ROOT,
        env={**env, "NUMBA_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_second_process_finds_the_compiled_kernels(tmp_path):
    """The image's warm-up command (its quick form), twice, in a fresh NUMBA_CACHE_DIR and with the image's CPU
    settings: the first compiles the kernels into the directory, the second loads them and compiles nothing."""
    settings = {k: v for k, v in image_env().items() if k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")} | settings
    cache = tmp_path / "numba-cache"
    first_s, first = run_warmup(cache, env)
    assert first["compiled"] > 0 and first["loaded"] == 0, first
    index = list(cache.rglob("*.nbi"))
    assert index and len(list(cache.rglob("*.nbc"))) == first["compiled"], (len(index), first)
    second_s, second = run_warmup(cache, env)
    assert second["compiled"] == 0 and second["loaded"] > 0, second
    print(f"warm-up --quick: {first_s:.1f} s cold, {second_s:.1f} s with the cache")
    assert second_s < 0.5 * first_s, (first_s, second_s)


# ------------------------------------------------------------------------------------------------------ helm
def helm_commands(text: str) -> list[list[str]]:
    """The ``helm`` commands of a Markdown text: lines of its code blocks (continuations joined) and inline code."""
    blocks = re.findall(r"```\w*\n(.*?)```", text, flags=re.DOTALL)
    rest = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    lines += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", rest)]
    return [shlex.split(line) for line in lines if line.startswith("helm ")]


@pytest.mark.parametrize("readme", ["README.md", "deploy/README.md"])
def test_readme_helm_commands_pin_the_chart_version(readme):
    """``helm install`` of the Dask operator pins the chart to the dask-kubernetes release the constraints pin
    (the chart is released with dask-kubernetes, under its version; its CRDs are those test_deploy.py checks)."""
    commands = [c for c in helm_commands((ROOT / readme).read_text()) if c[1] in ("install", "upgrade", "template")]
    assert commands, f"no helm install command in {readme}"
    for command in commands:
        assert "--version" in command, " ".join(command)
        version = command[command.index("--version") + 1]
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
        if "dask-kubernetes-operator" in command:
            assert version == constraint_pins()["dask-kubernetes"], (version, constraint_pins()["dask-kubernetes"])
