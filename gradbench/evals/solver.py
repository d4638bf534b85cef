"""The gradient-descent solver of GradBench's particle and saddle evals (its C++ reference's
`multivariate_argmin`, which their validators' expected values come from): steps of size eta
along the gradient, doubled after ten successful steps and halved after a failed one, until
the gradient or the step is shorter than 1e-5."""
import numpy as np


def argmin(f, gradient, x):
    fx = f(x)
    gx = gradient(x)
    i = 0
    eta = 1e-5
    while True:
        if np.sqrt(np.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta = 2 * eta
            i = 0
        else:
            x_prime = x - eta * gx
            if np.sqrt(np.sum((x - x_prime) ** 2)) <= 1e-5:
                return x
            fx_prime = f(x_prime)
            if fx_prime < fx:
                x = x_prime
                fx = fx_prime
                gx = gradient(x)
                i = i + 1
            else:
                eta = eta / 2
                i = 0
