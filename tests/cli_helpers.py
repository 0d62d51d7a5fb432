"""Helpers of the tests that run the ``lowdens`` command in this process (imported by those test modules)."""

import numpy as np
from lowdens_pipelines.cli import main


def blobs(n: int = 100, d: int = 3, seed: int = 0) -> np.ndarray:
    """Two well-separated groups of ``n`` rows each."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 10.0]).astype("f4")


def lowdens(capsys, *args) -> tuple[int, list[str], list[str]]:
    """(exit status, stdout lines, stderr lines) of ``lowdens ARGS`` run in this process."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def one_error_line(err: list[str]) -> str:
    """The one ``lowdens: error:`` line of ``err`` (and no traceback)."""
    errors = [line for line in err if line.startswith("lowdens: error:")]
    assert len(errors) == 1 and not any("Traceback" in line for line in err), err
    return errors[0]
