"""The spectral connectivity objective (issue 11, first part) against independent computations: the kernel's
formula, λ₂ of the N×N Laplacian of the data with each microcluster centre repeated n_j times (Lemma 6), and
central finite differences of the value for the gradient (spec §5.2 with its errata)."""

import math

import numpy as np
import pytest
from scipy.sparse.csgraph import laplacian as graph_laplacian

from lowdens_dask.indices.spectral import balancing_transform, kernel, spectral_connectivity


def weighted_centres(rng, K=14, d=5):
    n = rng.integers(1, 5, size=K).astype(float)
    C = rng.normal(size=(K, d)) + 3 * (np.arange(K) % 2)[:, None]
    C -= (n @ C) / n.sum()  # centred: Σ n_j c_j = 0
    return C, n


def test_kernel_formula():
    x = np.array([0.0, 0.3, 1.0, 4.0])
    np.testing.assert_allclose(kernel(x, 0.1), (x / 0.1 + 1) ** 0.1 * np.exp(-x), rtol=1e-14)
    np.testing.assert_allclose(kernel(x, 0.0), np.exp(-x), rtol=1e-14)


@pytest.mark.parametrize("laplacian", ["standard", "normalized"])
@pytest.mark.parametrize("beta", [math.inf, 1.0])
def test_reduced_eigenvalue_equals_the_repeated_data(laplacian, beta):
    rng = np.random.default_rng(1)
    C, n = weighted_centres(rng)
    V = np.linalg.qr(rng.normal(size=(C.shape[1], 2)))[0]
    sigma = 0.8
    got = spectral_connectivity(V, C, n, sigma, laplacian=laplacian, beta=beta).eigenvalue
    # the data: each centre repeated n_j times, its projections transformed, the full similarity matrix
    rows = np.repeat(np.arange(len(n)), n.astype(int))
    P = C[rows] @ V
    T = np.stack([balancing_transform(P[:, i], np.ones(len(rows)), beta, 0.01).t for i in range(2)], axis=1)
    distance = np.sqrt(((T[:, None, :] - T[None, :, :]) ** 2).sum(axis=2))
    A = (distance / sigma / 0.1 + 1) ** 0.1 * np.exp(-distance / sigma)
    if laplacian == "standard":
        L = graph_laplacian(A - np.diag(np.diag(A)))
    else:  # degrees include the self-similarity k(0) = 1
        degree = A.sum(axis=1)
        L = np.eye(len(rows)) - A / np.sqrt(np.outer(degree, degree))
    expected = np.linalg.eigvalsh(L)[1]
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("laplacian", ["standard", "normalized"])
@pytest.mark.parametrize(
    "l, beta, omega, alpha", [(1, math.inf, 0.0, 0.1), (1, 0.8, 0.0, 0.1), (2, 1.2, 0.7, 0.1), (2, 1.0, -0.5, 0.0)]
)
def test_gradient_matches_finite_differences(laplacian, l, beta, omega, alpha):
    rng = np.random.default_rng(2 + l)
    C, n = weighted_centres(rng)
    V = rng.normal(size=(C.shape[1], l))
    V /= np.linalg.norm(V, axis=0)
    kwargs = {"laplacian": laplacian, "alpha": alpha, "beta": beta, "delta": 0.05, "omega": omega}
    got = spectral_connectivity(V, C, n, 0.7, **kwargs)
    if beta < math.inf:  # the transform is active: some projections lie outside Δ
        P = C @ V[:, 0]
        sd = math.sqrt(n @ P**2 / n.sum())
        assert np.any(np.abs(P) > beta * sd)

    def value(W):
        return spectral_connectivity(W, C, n, 0.7, **kwargs).value

    step = 1e-6
    numeric = np.zeros_like(V)
    for index in np.ndindex(V.shape):
        up, down = V.copy(), V.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (value(up) - value(down)) / (2 * step)
    np.testing.assert_allclose(got.gradient, numeric, rtol=2e-5, atol=2e-7 * np.abs(numeric).max())


def test_bad_laplacian_is_refused():
    with pytest.raises(ValueError, match="laplacian must be one of"):
        spectral_connectivity(np.ones(2), np.zeros((3, 2)), np.ones(3), 1.0, laplacian="random-walk")
