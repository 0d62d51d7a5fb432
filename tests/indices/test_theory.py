"""The paper's theory, checked on the library's own code (seed-mdh §9; Pavlidis et al. JMLR 2016)."""

import math

import numpy as np
import pytest
from scipy import integrate, optimize
from tolerances import sum_rtol

from lowdens_dask import MDH
from lowdens_dask.backend import InMemoryData
from lowdens_dask.indices import MinimumDensityIndex
from lowdens_dask.indices.density import minimise_penalised_density
from lowdens_dask.kernels.kde import weighted_moments
from lowdens_dask.pursuit.hyperplanes import _InMemoryObjective


def kde_nd(x, X, h):
    """The d-dimensional isotropic Gaussian KDE of eq. 2, by direct summation."""
    d = X.shape[1]
    sq = ((X - x) ** 2).sum(axis=1)
    return np.exp(-sq / (2 * h * h)).sum() / (X.shape[0] * (2 * math.pi * h * h) ** (d / 2))


def unit(theta):
    return np.array([math.cos(theta), math.sin(theta)])


@pytest.mark.parametrize("seed", range(3))
def test_eq3_hyperplane_integral_is_the_projected_kde(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2)) @ np.array([[1.0, 0.3], [0.0, 0.7]])
    h = 0.45
    v = unit(rng.uniform(0, math.pi))
    perp = np.array([-v[1], v[0]])
    b = rng.normal(scale=0.5)
    integral, err = integrate.quad(lambda t: kde_nd(b * v + t * perp, X, h), -np.inf, np.inf, epsabs=1e-12)
    index = MinimumDensityIndex(h)
    projected = math.exp(index.log_density(X @ v, np.ones(40), b))
    assert projected == pytest.approx(integral, rel=1e-7)


def test_eq3_in_three_dimensions():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(25, 3))
    h = 0.6
    v = rng.normal(size=3)
    v /= np.linalg.norm(v)
    basis = np.linalg.svd(v[None, :])[2][1:]  # orthonormal basis of v-perp
    b = 0.2

    def integrand(t2, t1):
        return kde_nd(b * v + t1 * basis[0] + t2 * basis[1], X, h)

    integral, _ = integrate.dblquad(integrand, -8, 8, -8, 8, epsabs=1e-11)
    projected = math.exp(MinimumDensityIndex(h).log_density(X @ v, np.ones(25), b))
    assert projected == pytest.approx(integral, rel=1e-6)


@pytest.mark.parametrize("d", [2, 5])
def test_lemma1_bound(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(60, d))
    h = 0.5
    index = MinimumDensityIndex(h)
    for _ in range(20):
        v = rng.normal(size=d)
        v /= np.linalg.norm(v)
        b = rng.normal()
        bound = (2 * math.pi * h * h) ** ((1 - d) / 2) * math.exp(index.log_density(X @ v, np.ones(60), b))
        on_plane = X - np.outer(X @ v - b, v)  # projections of the data onto H
        random_pts = rng.normal(size=(30, d))
        random_pts -= np.outer(random_pts @ v - b, v)
        for x in np.vstack([on_plane, random_pts]):
            assert kde_nd(x, X, h) <= bound * (1 + 1e-12)


def test_lemma1_equality_for_collinear_data():
    rng = np.random.default_rng(0)
    d, h = 4, 0.3
    v = rng.normal(size=d)
    v /= np.linalg.norm(v)
    x0 = rng.normal(size=d)
    b = float(x0 @ v)
    X = x0 + np.outer(rng.normal(size=30), v)
    bound = (2 * math.pi * h * h) ** ((1 - d) / 2) * math.exp(MinimumDensityIndex(h).log_density(X @ v, np.ones(30), b))
    assert kde_nd(x0, X, h) == pytest.approx(bound, rel=1e-12)


def bimodal(rng, n=400, d=5, shift=3.0, frac=0.5):
    X = rng.normal(size=(n, d))
    X[: int(frac * n), 0] += shift
    return X


@pytest.mark.parametrize("alpha,frac,interior", [(0.9, 0.5, True), (0.05, 0.3, False)])
def test_gradient_matches_finite_differences(alpha, frac, interior):
    """eq. 26: the envelope-theorem gradient of phi(v) = min_b log f_CL, against central differences
    of phi with b re-optimised at every point, in the interior and in the penalty zone."""
    rng = np.random.default_rng(1)
    X = bimodal(rng, frac=frac)
    data = InMemoryData(X)
    vals, vecs = data.leading_eigenvectors(1)
    h = 0.9 * math.sqrt(vals[0]) * X.shape[0] ** -0.2
    index = MinimumDensityIndex(h)
    objective = _InMemoryObjective(data, index)
    v = np.array([1.0, 0.2, -0.1, 0.05, 0.1])
    f0, grad, ev = objective.answer(("evaluate", v, alpha, True), 1)
    assert index.stage_done(ev.split) == interior
    for _ in range(5):
        e = rng.normal(size=5)
        step = 1e-6
        plus = objective.answer(("evaluate", v + step * e, alpha, False), 1)[0]
        minus = objective.answer(("evaluate", v - step * e, alpha, False), 1)[0]
        fd = (plus - minus) / (2 * step)
        # phi is a log of a sum over the rows: each evaluation rounds by n eps of |phi|, which the difference
        # quotient divides by the step (tests/tolerances.py)
        assert grad @ e == pytest.approx(fd, rel=1e-5, abs=max(1e-8, sum_rtol(np.ones(len(X))) * abs(f0) / step))


@pytest.mark.parametrize("alpha", [0.05, 0.2, 0.6])
def test_proposition2_penalised_minimiser_within_eta(alpha):
    """Prop. 2: the constrained minimiser of I over F(v) and the penalised minimiser of f_CL differ by at
    most eta, and no penalised minimiser lies more than eta outside F(v)."""
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.normal(-2.5, 0.6, 150), rng.normal(0.8, 1.0, 350)])  # asymmetric: minimum off-centre
    w = np.ones_like(p)
    h, eta, eps = 0.3, 1e-2, 1 - 1e-6
    total, mean, std, _, _ = weighted_moments(p, w)
    lo, hi = mean - alpha * std, mean + alpha * std
    index = MinimumDensityIndex(h, eta, eps)
    b_pen = minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, np.empty_like(p))[0]
    grid = np.linspace(lo, hi, 4001)
    dens = np.array([index.log_density(p, w, x) for x in grid])
    j = int(np.argmin(dens))
    bracket = (grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)])
    res = optimize.minimize_scalar(lambda x: index.log_density(p, w, x), bounds=bracket, method="bounded",
                                   options={"xatol": 1e-10})
    b_con = res.x if index.log_density(p, w, res.x) <= dens[j] else grid[j]
    assert abs(b_con - b_pen) <= eta
    assert lo - eta <= b_pen <= hi + eta
    if alpha == 0.05:  # the constrained optimum sits on the boundary: the case Prop. 2 is about
        assert min(abs(b_con - lo), abs(b_con - hi)) < 1e-6


# ---------------------------------------------------------------------------------------------------
# MDH -> maximum margin hyperplane as h -> 0 (Lemmas 3-6, Theorem 5; Figure 3 recipe)

ALPHA = 0.9


def figure3_data():
    """Two equal-covariance Gaussians split by H((1,-1)/sqrt2, 0), with a strip emptied around a
    different line so that the maximum margin hyperplane is that artificial one."""
    rng = np.random.default_rng(11)
    n = 300
    direction = np.array([1.0, -1.0]) / math.sqrt(2)
    X = rng.normal(size=(n, 2)) * 0.8
    X[: n // 2] += 1.3 * direction
    X[n // 2 :] -= 1.3 * direction
    strip = unit(math.atan2(-1, 1) + 0.35)
    keep = np.abs(X @ strip - 0.15) > 0.22
    return X[keep], strip


def feasible_margin(p):
    """Largest margin of a split of sorted projections p with b in [mu - a s, mu + a s]."""
    mean, std = p.mean(), p.std(ddof=1)
    lo, hi = mean - ALPHA * std, mean + ALPHA * std
    q = np.sort(p)
    mid = np.clip((q[1:] + q[:-1]) / 2, lo, hi)
    margin = np.minimum(mid - q[:-1], q[1:] - mid)
    k = int(np.argmax(margin))
    return margin[k], mid[k]


def best_over_angles(score, centre=None, width=math.pi, n=3600):
    thetas = np.linspace(0, math.pi, n, endpoint=False) if centre is None else np.linspace(
        centre - width, centre + width, n
    )
    vals = [score(t) for t in thetas]
    return thetas[int(np.argmin(vals))]


def margin_of(X, v, b):
    return np.min(np.abs(X @ v - b))


@pytest.mark.slow
def test_mdh_converges_to_maximum_margin_hyperplane():
    X, _ = figure3_data()
    centred = X - X.mean(axis=0)
    w = np.ones(len(X))

    def neg_margin(t):
        return -feasible_margin(centred @ unit(t))[0]

    t_m = best_over_angles(neg_margin)
    t_m = best_over_angles(neg_margin, t_m, 2 * math.pi / 3600, 2001)
    v_m = unit(t_m)
    max_margin, b_m = feasible_margin(centred @ v_m)
    part_m = centred @ v_m < b_m

    distances, margins = [], []
    for h in (0.43, 0.22, 0.11, 0.05, 0.03, 0.01, 0.005):
        index = MinimumDensityIndex(h)

        def phi(t):
            return index.evaluate(centred @ unit(t), w, ALPHA).value

        t = best_over_angles(phi)
        t = best_over_angles(phi, t, 2 * math.pi / 3600, 2001)
        v = unit(t)
        b = index.evaluate(centred @ v, w, ALPHA).b
        assert math.isfinite(b)
        margins.append(margin_of(centred, v, b))
        distances.append(min(np.linalg.norm(np.r_[v - v_m, b - b_m]), np.linalg.norm(np.r_[v + v_m, b + b_m])))
        if h <= 0.03:  # Lemma 4: same partition as the MMH for all small h
            part = centred @ v < b
            assert np.array_equal(part, part_m) or np.array_equal(part, ~part_m)
    # at the largest bandwidth the MDH follows the density (far from the artificial MMH) ...
    assert distances[0] > 0.1
    assert margins[0] < 0.5 * max_margin
    # ... and as h -> 0 it converges to the MMH (Theorem 5) with margin -> maximum margin (Lemma 3)
    assert distances[-1] < 0.002
    assert margins[-1] >= 0.999 * max_margin
    assert distances[-1] < distances[-3] < distances[3] < distances[0]


def test_mdh_estimator_at_small_bandwidth_finds_the_max_margin_partition():
    """The estimator itself (MDP², BFGS over log f in the log domain) at h = 0.01 reproduces the MMH split."""
    X, _ = figure3_data()
    centred = X - X.mean(axis=0)
    t_m = best_over_angles(lambda t: -feasible_margin(centred @ unit(t))[0])
    v_m = unit(t_m)
    _, b_m = feasible_margin(centred @ v_m)
    model = MDH(bandwidth=0.01, alphas=[ALPHA], v0=v_m + np.array([0.05, -0.03])).fit(X)
    part = centred @ v_m < b_m
    assert np.array_equal(model.labels_ == 0, part) or np.array_equal(model.labels_ == 1, part)
    assert margin_of(X, model.v_, model.b_) >= 0.95 * feasible_margin(centred @ v_m)[0]


def test_eq30_relative_depth_from_logs_by_hand():
    """rd = min(I(m_left), I(m_right)) / I(b) - 1 (eq. 30): densities 0.5 and 0.3 at the modes, 0.1 at b."""
    from lowdens_dask.indices.density import relative_depth_from_logs

    assert relative_depth_from_logs(math.log(0.1), math.log(0.5), math.log(0.3)) == pytest.approx(2.0, rel=1e-12)
    assert relative_depth_from_logs(math.log(0.1), math.log(0.3), math.log(0.5)) == pytest.approx(2.0, rel=1e-12)
    assert relative_depth_from_logs(math.log(0.4), math.log(0.3), math.log(0.5)) == 0.0  # b above a mode


def test_eq30_relative_depth_of_a_three_point_kde():
    """Relative depth of b = 0 for the KDE of p = (-1, 1, 1), h = 0.5 (in memory, and over chunks), against
    modes found by root-finding on the derivative of the directly summed density."""
    import dask.array as da

    from lowdens_dask.backend.chunked import ChunkedNode
    from lowdens_dask.indices import density_passes
    from lowdens_dask.indices.density import relative_depth_from_logs

    p, h = np.array([-1.0, 1.0, 1.0]), 0.5

    def kde(x):
        return np.exp(-((x - p) ** 2) / (2 * h * h)).sum() / (p.size * h * math.sqrt(2 * math.pi))

    def slope(x):
        return ((p - x) * np.exp(-((x - p) ** 2) / (2 * h * h))).sum()

    left = optimize.brentq(slope, -1.5, -0.5, xtol=1e-14)
    right = optimize.brentq(slope, 0.5, 1.5, xtol=1e-14)
    expected = min(kde(left), kde(right)) / kde(0.0) - 1.0
    assert kde(left) < kde(right)  # so min and max differ
    assert MinimumDensityIndex(h).relative_depth(p, np.ones(3), 0.0) == pytest.approx(expected, rel=1e-8)
    assert MinimumDensityIndex(h).relative_depth(p, np.ones(3), 2.0) == 0.0  # no mode on the right of b

    proj = ChunkedNode(da.from_array(p[:, None], chunks=(2, 1))).projections(np.ones((1, 1)))
    mom = density_passes.projection_moments(proj)
    ((below, log_b, log_mode),) = density_passes.split_statistics(proj, mom, h, [0.0])
    assert below == 1.0
    assert relative_depth_from_logs(log_b, log_mode, log_mode) == pytest.approx(expected, rel=1e-8)
