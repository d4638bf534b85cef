"""hello: `square` is x², `double` its derivative (GradBench's protocol check)."""
import s2sad

from gradbench.evals import Function

BACKENDS = ("python", "numba")


def square(x):
    return x * x


def _x(input):
    return (float(input),)


def functions(backend):
    return {"square": Function(_x, square, float),
            "double": Function(_x, s2sad.grad(square, backend=backend), float)}
