"""The spectral connectivity objective (issue 11, first part) against independent computations: the kernel's
formula, λ₂ of the N×N Laplacian of the data with each microcluster centre repeated n_j times (Lemma 6), and
central finite differences of the value for the gradient (spec §5.2 with its errata), for the paper's and the
R package's variants; and the compiled kernels against the numpy formulas."""

import math

import numpy as np
import pytest
from scipy.linalg import eigh
from scipy.sparse.csgraph import laplacian as graph_laplacian
from scipy.spatial.distance import cdist
from tolerances import EPS, SAFETY

from lowdens_dask.indices.spectral import balancing_transform, smallest_eigenpairs, spectral_connectivity
from lowdens_dask.kernels.spectral import (
    balance_columns,
    eigenvalue_gradient,
    laplacian_matrix,
    similarity,
    similarity_matrix,
)


def weighted_centres(rng, K=14, d=5):
    n = rng.integers(1, 5, size=K).astype(float)
    C = rng.normal(size=(K, d)) + 3 * (np.arange(K) % 2)[:, None]
    C -= (n @ C) / n.sum()  # centred: Σ n_j c_j = 0
    return C, n


def central_differences(f, V: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """d f / d V by central differences, entry by entry."""
    numeric = np.zeros_like(V)
    for index in np.ndindex(V.shape):
        up, down = V.copy(), V.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (f(up) - f(down)) / (2 * step)
    return numeric


def test_kernel_formula():
    x = np.array([0.0, 0.3, 1.0, 4.0])

    def k(alpha, gaussian=False):
        return np.array([similarity(r * r, gaussian, alpha)[0] for r in x])

    np.testing.assert_allclose(k(0.1), (x / 0.1 + 1) ** 0.1 * np.exp(-x), rtol=1e-14)
    np.testing.assert_allclose(k(0.0), np.exp(-x), rtol=1e-14)
    np.testing.assert_allclose(k(0.0, gaussian=True), np.exp(-0.5 * x**2), rtol=1e-14)


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
    # an eigenvalue of the repeated rows' N x N Laplacian: within the rounding of its rows' sums (|L|_inf bounds
    # |L|_2), not relative to a small lambda_2
    atol = SAFETY * len(L) * EPS * np.abs(L).sum(axis=1).max()
    assert got == pytest.approx(expected, rel=1e-9, abs=atol)


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

    numeric = central_differences(value, V)
    np.testing.assert_allclose(got.gradient, numeric, rtol=2e-5, atol=2e-7 * np.abs(numeric).max())


def test_bad_laplacian_is_refused():
    with pytest.raises(ValueError, match="laplacian must be one of"):
        spectral_connectivity(np.ones(2), np.zeros((3, 2)), np.ones(3), 1.0, laplacian="random-walk")


# ------------------------------------------------------------------------------------------ compiled kernels


def reference_laplacian(T, n, sigma, similarity, alpha, laplacian, standard_scale):
    """The K×K matrix from its definition with scipy's distances (spec §3, §7.2)."""
    r = cdist(T, T) / sigma
    S = np.exp(-0.5 * r**2) if similarity == "gaussian" else (r / alpha + 1) ** alpha * np.exp(-r)
    if laplacian == "standard":
        A = np.sqrt(np.outer(n, n)) * S
        return standard_scale * (np.diag(S @ n) - A), n
    W = np.outer(n, n) * S
    degree = W.sum(axis=1)
    return np.eye(len(n)) - W / np.sqrt(np.outer(degree, degree)), degree


@pytest.mark.parametrize("laplacian", ["standard", "normalized"])
@pytest.mark.parametrize("similarity", ["gaussian", "paper"])
def test_compiled_laplacian_and_derivative_equal_numpy(laplacian, similarity):
    rng = np.random.default_rng(4)
    T = rng.normal(size=(30, 2))
    n = rng.integers(1, 6, size=30).astype(float)
    sigma, alpha, scale = 0.7, 0.1, 1 / 37
    settings = (1 / sigma**2, similarity == "gaussian", alpha, laplacian == "normalized", scale)
    M, degree = laplacian_matrix(T, n, *settings)
    ref, ref_degree = reference_laplacian(T, n, sigma, similarity, alpha, laplacian, scale)
    np.testing.assert_allclose(M, ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(degree, ref_degree, rtol=1e-12)
    lam, U = np.linalg.eigh(M)
    got = eigenvalue_gradient(T, n, U[:, 1].copy(), lam[1], degree, *settings)

    def eigenvalue(T2):  # λ₂ of the reference matrix at moved points
        return np.linalg.eigvalsh(reference_laplacian(T2, n, sigma, similarity, alpha, laplacian, scale)[0])[1]

    numeric = central_differences(eigenvalue, T)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-8 * np.abs(numeric).max())


def test_well_separated_points_keep_their_small_connectivity():
    """The standard Laplacian's diagonal is summed without the self-similarity, which would cancel
    similarities far below rounding error of the point's own weight."""
    T = np.array([[0.0], [0.1], [30.0], [30.1]])
    n = np.array([1000.0, 1000.0, 1000.0, 1000.0])
    M, _ = laplacian_matrix(T, n, 1.0, True, 0.1, False, 1.0)
    lam = np.linalg.eigvalsh(M)
    expected = 2 * 1000 * math.exp(-0.5 * 29.9**2)  # two pairs of links across the gap, to first order
    assert lam[1] == pytest.approx(expected, rel=0.05)


# ------------------------------------------------------------------------------------------ gradient


@pytest.mark.parametrize("laplacian", ["standard", "normalized"])
@pytest.mark.parametrize("l", [1, 2])
@pytest.mark.parametrize("scheme", ["package", "paper"])
def test_gradient_of_each_variant_matches_central_differences(laplacian, l, scheme):
    """Both Laplacians, both projection dimensions, the package's (Gaussian kernel, Δ from the covariance,
    L/N) and the paper's objective, at a random point (away from the non-smooth set: λ₂ simple)."""
    rng = np.random.default_rng(10 + l)
    C, n = weighted_centres(rng, K=16)
    V = rng.normal(size=(C.shape[1], l))
    V /= np.linalg.norm(V, axis=0)
    kwargs = {"laplacian": laplacian, "beta": 1.2, "delta": 0.05, "omega": 0.4}
    if scheme == "package":
        cov = np.cov(C.T, aweights=n) + 0.1 * np.eye(C.shape[1])
        kwargs.update(similarity="gaussian", covariance=cov, standard_scale=1 / n.sum())
    got = spectral_connectivity(V, C, n, 0.8, **kwargs)
    lam = got.eigenvalues
    assert lam[2] - lam[1] > 1e-3 * lam[1]  # simple

    def value(W):
        return spectral_connectivity(W, C, n, 0.8, **kwargs).value

    numeric = central_differences(value, V)
    np.testing.assert_allclose(got.gradient, numeric, rtol=2e-5, atol=2e-7 * np.abs(numeric).max())


def test_covariance_form_of_delta_uses_the_given_spread():
    p = np.array([-3.0, -1.0, 0.0, 1.0, 3.0])
    t = balancing_transform(p, np.ones(5), beta=1.0, delta=0.01, sd=2.0)
    np.testing.assert_allclose(t.t[1:4] - t.t[2], p[1:4])  # inside [-2, 2]: the identity (shifted)
    assert 0 < t.t[4] - (t.t[3] + 1.0) < 0.02 and t.sd == 2.0  # 1 inside Δ, then 1 outside contracted to ~δ


# ------------------------------------------------------------------------------------------ issue 44: fewer passes


@pytest.mark.parametrize("l", [1, 2])
@pytest.mark.parametrize("beta", [0.7, 1.5])
def test_compiled_balancing_transform_equals_numpy(l, beta):
    """balance_columns against the numpy balancing_transform, column by column, with points on both sides of Δ
    and on its ends (issue 44: the transform moved into a compiled kernel)."""
    rng = np.random.default_rng(20 + l)
    P = rng.normal(size=(40, l)) * 2.0
    sds = np.array([1.3, 0.9])[:l]
    P[0, 0] = beta * sds[0]  # on Δ's upper end: the identity
    P[1, 0] = -beta * sds[0]
    delta = 0.01
    c_star = math.exp(math.log(delta * (1 - delta)) / delta)
    offset = delta * c_star ** (1 - delta)
    T, slope, kappa = balance_columns(P, beta, delta, sds, c_star, offset)
    for i in range(l):
        assert np.any(P[:, i] < -beta * sds[i]) and np.any(P[:, i] > beta * sds[i])
        ref = balancing_transform(P[:, i], np.ones(len(P)), beta, delta, sd=float(sds[i]))
        np.testing.assert_allclose(T[:, i], ref.t, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(slope[i], ref.slope, rtol=1e-14)
        np.testing.assert_allclose(kappa[i], ref.kappa, rtol=1e-14)


@pytest.mark.parametrize("similarity", ["gaussian", "paper"])
def test_similarity_slopes_match_the_kernels_derivative(similarity):
    """similarity_matrix's S against the kernel's formula and R = k'(r)/r against central differences of that
    formula (the slopes the gradient reads instead of computing each exponential again)."""
    rng = np.random.default_rng(23)
    T = rng.normal(size=(25, 2))
    sigma, alpha = 0.7, 0.1
    S, R = similarity_matrix(T, 1 / sigma**2, similarity == "gaussian", alpha)

    def k(r):
        return np.exp(-0.5 * r**2) if similarity == "gaussian" else (r / alpha + 1) ** alpha * np.exp(-r)

    r = cdist(T, T) / sigma
    np.testing.assert_allclose(S, k(r), rtol=1e-13)
    upper = np.triu_indices(len(T), 1)
    h = 1e-6
    numeric = (k(r[upper] + h) - k(r[upper] - h)) / (2 * h) / r[upper]
    np.testing.assert_allclose(R[upper], numeric, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(R, R.T * (1 - np.eye(len(T))) + np.diag(np.diag(R)))  # symmetric


@pytest.mark.parametrize("K", [2, 3, 30, 200])
def test_smallest_eigenpairs_are_scipys_evr_numbers(K):
    """The direct LAPACK call gives exactly what scipy.linalg.eigh(subset_by_index=[0, 2], driver="evr") gives on the
    same matrix (the same routine and workspace), and the eigenpairs of numpy's eigh to rounding; the Laplacian is
    Fortran-ordered, so LAPACK works on it in place."""
    rng = np.random.default_rng(K)
    T = rng.normal(size=(K, 2))
    n = rng.integers(1, 5, size=K).astype(float)
    M, _ = laplacian_matrix(T, n, 1.5, True, 0.1, True, 1.0)
    assert M.flags.f_contiguous
    copy = np.array(M, order="C")
    expected_lam, expected_U = eigh(copy, subset_by_index=[0, min(2, K - 1)], driver="evr")
    lam, U = smallest_eigenpairs(M, min(3, K))
    np.testing.assert_array_equal(lam, expected_lam)
    np.testing.assert_array_equal(U, expected_U)
    all_lam = np.linalg.eigvalsh(copy)[: min(3, K)]
    np.testing.assert_allclose(lam, all_lam, atol=SAFETY * K * EPS * np.abs(copy).sum(axis=1).max())
    np.testing.assert_allclose(copy @ U, U * lam, atol=1e-10)
