"""Newton's method with derivatives from s2sad's forward mode.

1. A nonlinear system F(z) = 0 in three unknowns. Each Newton step solves
   J(z) dz = -F(z), with the Jacobian from `s2sad.jacfwd`: three forward passes, one per
   unknown, each giving a column of J.
2. The minimum of the Rosenbrock function. Newton steps use the exact Hessian from
   `s2sad.hessian` (forward mode applied to the generated gradient code). In 20
   dimensions, Newton-CG solves for each step with Hessian-vector products from
   `s2sad.hvp` and never forms the Hessian.

Run: python examples/newton.py
"""
import numpy as np

import s2sad


def system(z):
    """Three equations; (1, 1, 1) is one of their solutions."""
    x, y, w = z[0], z[1], z[2]
    return np.array([x * x + 2 * y * y + 3 * w * w - 6.0, x * y * w - 1.0, np.exp(x - y) - w])


def solve_system(z, steps=20, tol=1e-12):
    jacobian = s2sad.jacfwd(system)
    for k in range(steps):
        residual = system(z)
        if np.linalg.norm(residual) < tol:
            return z, k
        z = z - np.linalg.solve(jacobian(z), residual)
    raise RuntimeError("Newton's method did not converge")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def minimize_newton(x, steps=50, tol=1e-10):
    """Newton's method with a backtracking line search, exact Hessians."""
    gradient, hessian = s2sad.grad(rosenbrock), s2sad.hessian(rosenbrock)
    for k in range(steps):
        g = gradient(x)
        if np.linalg.norm(g) < tol:
            return x, k
        step = np.linalg.solve(hessian(x), -g)
        t = 1.0
        while rosenbrock(x + t * step) > rosenbrock(x) and t > 1e-8:
            t /= 2
        x = x + t * step
    raise RuntimeError("Newton's method did not converge")


def minimize_newton_cg(x, steps=100, tol=1e-8):
    """Newton-CG: each step solves H p = -g by conjugate gradients on H v products."""
    gradient, hvp = s2sad.grad(rosenbrock), s2sad.hvp(rosenbrock)
    for k in range(steps):
        g = gradient(x)
        if np.linalg.norm(g) < tol:
            return x, k
        p, r = np.zeros_like(x), -g
        d = r.copy()
        for _ in range(len(x)):
            hd = hvp(x, d)
            curvature = d @ hd
            if curvature <= 0:          # not convex here: take the steepest descent step
                p = p if p.any() else -g
                break
            alpha = (r @ r) / curvature
            p, r_new = p + alpha * d, r - alpha * hd
            if np.linalg.norm(r_new) < 1e-10:
                break
            d, r = r_new + (r_new @ r_new) / (r @ r) * d, r_new
        t = 1.0
        while rosenbrock(x + t * p) > rosenbrock(x) and t > 1e-8:
            t /= 2
        x = x + t * p
    raise RuntimeError("Newton-CG did not converge")


if __name__ == "__main__":
    z, k = solve_system(np.array([1.5, 0.5, 1.2]))
    print(f"system: z = {np.round(z, 12)} after {k} Newton steps")
    assert np.allclose(z, 1.0, atol=1e-10)

    x, k = minimize_newton(np.array([-1.2, 1.0]))
    print(f"Rosenbrock in 2-D: x = {np.round(x, 10)} after {k} Newton steps")
    assert np.allclose(x, 1.0, atol=1e-8)

    x, k = minimize_newton_cg(np.full(20, -0.5))
    print(f"Rosenbrock in 20-D: max |x - 1| = {np.max(np.abs(x - 1)):.1e} after {k} "
          "Newton-CG steps")
    assert np.allclose(x, 1.0, atol=1e-6)
