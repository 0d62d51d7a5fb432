"""Plain numpy/scipy reference implementation of MDH (MDP²) and divisive MDH clustering.

Written straight from the specification (/work/shared/research/seed-mdh.md §5-6; Pavlidis, Hofmeyr &
Tasoulis, JMLR 17(156), 2016), independently of ``lowdens_dask``. It is the yardstick for the
library's speed-up and an independent check of its quality. Every KDE is a direct O(n m) sum.
"""

import numpy as np
from scipy.optimize import minimize, minimize_scalar

SQRT_2PI = np.sqrt(2.0 * np.pi)
DEFAULT_ALPHAS = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
B_GRID = 200  # grid points for the b search
MODE_GRID = 400  # grid points for the mode search of the relative depth


def kde(x, p, h):
    """1-D Gaussian KDE of the projections p with bandwidth h, at the points x (eq. 3)."""
    u = (np.atleast_1d(x)[:, None] - p[None, :]) / h
    return np.exp(-0.5 * u * u).sum(axis=1) / (p.size * h * SQRT_2PI)


class _Index:
    """f_CL(v, b) (eq. 10), its minimiser over b and the envelope-theorem gradient in v (spec §5.4-5.5)."""

    def __init__(self, Xc, h, alpha, eta, eps):
        self.Xc, self.h, self.alpha, self.eta, self.eps = Xc, h, alpha, eta, eps
        self.coef = 1.0 / (np.sqrt(2.0 * np.pi * np.e) * h * h) / eta**eps  # L / eta^eps

    def interval(self, p):
        mu, sd = p.mean(), p.std(ddof=1)
        return mu, sd, mu - self.alpha * sd, mu + self.alpha * sd

    def f_cl(self, b, p, lo, hi):
        b = np.atleast_1d(b)
        dist = np.maximum(0.0, np.maximum(lo - b, b - hi))
        return kde(b, p, self.h) + self.coef * dist ** (1.0 + self.eps)

    def best_b(self, p):
        """Global minimiser of f_CL over [lo - eta, hi + eta]: grid search, then bounded Brent."""
        _, _, lo, hi = self.interval(p)
        grid = np.linspace(lo - self.eta, hi + self.eta, B_GRID)
        vals = self.f_cl(grid, p, lo, hi)
        j = int(np.argmin(vals))
        a, c = grid[max(j - 1, 0)], grid[min(j + 1, B_GRID - 1)]
        res = minimize_scalar(lambda b: self.f_cl(b, p, lo, hi)[0], bounds=(a, c), method="bounded",
                              options={"xatol": 1e-7 * self.h})
        if res.fun < vals[j]:
            return float(res.x), float(res.fun)
        return float(grid[j]), float(vals[j])

    def phi(self, v):
        """phi(v) = min_b f_CL(v/|v|, b) and its gradient with respect to the unnormalised v."""
        norm = np.linalg.norm(v)
        u = v / norm
        p = self.Xc @ u
        b, f = self.best_b(p)
        n, h, eps = p.size, self.h, self.eps
        mu, sd, lo, hi = self.interval(p)
        d = b - p
        g = d * np.exp(-d * d / (2.0 * h * h)) / (n * h**3 * SQRT_2PI)  # KDE part
        dsd = (p - mu) / ((n - 1) * sd)  # d sd / d p_i
        if b > hi:  # r = b - mu - alpha sd
            g += self.coef * (1.0 + eps) * (b - hi) ** eps * (-1.0 / n - self.alpha * dsd)
        elif b < lo:  # r = mu - alpha sd - b
            g += self.coef * (1.0 + eps) * (lo - b) ** eps * (1.0 / n - self.alpha * dsd)
        xg = self.Xc.T @ g
        return f, (xg - u * (u @ xg)) / norm


def relative_depth(p, b, h):
    """Relative depth (eq. 30) with the KDE modes adjacent to b; 0 if b does not separate two modes."""
    grid = np.linspace(p.min(), p.max(), MODE_GRID)
    vals = np.concatenate(([-np.inf], kde(grid, p, h), [-np.inf]))
    is_mode = (vals[1:-1] > vals[:-2]) & (vals[1:-1] >= vals[2:])
    modes = grid[is_mode]
    left, right = modes[modes < b], modes[modes > b]
    if left.size == 0 or right.size == 0:
        return 0.0
    f_modes = kde(np.array([left[-1], right[0]]), p, h)
    f_b = kde(b, p, h)[0]
    return max(0.0, (f_modes.min() - f_b) / f_b)


def mdh_reference(X, alphas=DEFAULT_ALPHAS, eta=0.01, eps=1 - 1e-6, maxiter=50, ftol=1e-5, min_size=1):
    """One minimum density hyperplane by MDP². Returns (v, b, relative_depth); side 0 is X @ v < b."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    n = X.shape[0]
    lam, U = np.linalg.eigh(np.atleast_2d(np.cov(Xc, rowvar=False, ddof=1)))
    h = 0.9 * np.sqrt(max(lam[-1], 0.0)) * n**-0.2
    if not h > 0:
        return U[:, -1], float(mean @ U[:, -1]), 0.0
    best = None
    for start in range(min(2, X.shape[1])):  # PC1, then PC2
        v = U[:, -1 - start].copy()
        kept = None
        for alpha in alphas:
            index = _Index(Xc, h, alpha, eta, eps)
            last_f = [np.inf]

            def stop_on_ftol(intermediate_result):  # OPC/PPCI-style stop on a small relative decrease
                f = intermediate_result.fun
                if last_f[0] - f <= ftol * abs(f):
                    raise StopIteration
                last_f[0] = f

            res = minimize(index.phi, v, jac=True, method="BFGS", callback=stop_on_ftol,
                           options={"maxiter": maxiter})
            v = res.x / np.linalg.norm(res.x)
            p = Xc @ v
            b, _ = index.best_b(p)
            _, _, lo, hi = index.interval(p)
            n_left = int(np.sum(p < b))
            if lo < b < hi and min(n_left, n - n_left) >= min_size:
                depth = relative_depth(p, b, h)
                if depth > 0:
                    kept = (v.copy(), b, depth)
        if kept is None:
            kept = (v.copy(), b, 0.0)
        if best is None or kept[2] > best[2]:
            best = kept
    v, b, depth = best
    return v, float(b + mean @ v), float(depth)


def mddc_reference(X, n_clusters, min_size=1):
    """Divisive clustering: repeatedly split the largest leaf with a valid MDH (PPCI ``mddc``)."""
    X = np.asarray(X, dtype=np.float64)

    def node(rows):
        if rows.size < max(2 * min_size, 3):
            return rows, None
        v, b, depth = mdh_reference(X[rows], min_size=min_size)
        return rows, ((v, b) if depth > 0 else None)

    leaves = [node(np.arange(X.shape[0]))]
    while len(leaves) < n_clusters:
        splittable = [i for i, (rows, hp) in enumerate(leaves) if hp is not None]
        if not splittable:
            break
        rows, (v, b) = leaves.pop(max(splittable, key=lambda i: leaves[i][0].size))
        left = X[rows] @ v < b
        leaves += [node(rows[left]), node(rows[~left])]
    labels = np.empty(X.shape[0], dtype=np.int64)
    for k, (rows, _) in enumerate(leaves):
        labels[rows] = k
    return labels
