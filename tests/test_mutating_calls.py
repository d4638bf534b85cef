"""Calls that write into their arguments, and attribute assignment (issue #34, item 5):
a method changing `self` (`p.step(dt)`), a helper filling an array it is given
(`fill(x, out)`), `obj.x = v` on an object the function made, each differentiated as a
new version of the object or array (before_ad/attribute_writes.py); in grad,
value_and_grad, vjp, jvp and hessian against central differences of the function as it
is (float64); and what stays refused, located at the user's line."""
import inspect
import re

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad, fd_hessian

X = np.array([0.7, -1.3])


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


V = np.array([0.4, 1.1])


class Particle:
    def __init__(self, pos, vel):
        self.pos = pos
        self.vel = vel

    def step(self, dt):     # the second write reads the first's new value: order matters
        self.pos = self.pos + dt * self.vel
        self.vel = self.vel - dt * np.sin(self.pos)


class Acc:
    pass


def stepped_for(x):
    p = Particle(x, 0.5 * x)
    for _ in range(3):
        p.step(0.1)
    return np.sum(p.pos ** 2 + p.vel ** 2)


def stepped_while(x):
    p = Particle(x, np.cos(x))
    k = 0
    while k < 4:
        p.step(0.05 * (k + 1))
        k += 1
    return np.sum(p.pos * p.vel)


def fill(x, out):
    for i in range(len(out)):
        out[i] = np.sin(x[i % 2] * (i + 1))
    return np.sum(out)


def filled(x):
    buf = np.zeros(3)
    s = fill(x, buf)
    return s * np.sum(buf ** 2)


def accumulated(x):
    a = Acc()
    a.total = 0.0
    for xi in x:
        a.total += xi ** 2 * a.total + xi
    return a.total


def branch(x):
    p = Particle(x, x * x)
    if np.sum(x) > 0:
        p.vel = p.vel * 3.0
    else:
        p.pos = np.exp(p.pos)
    return np.sum(p.pos * p.vel)


FORMS = [stepped_for, stepped_while, filled, accumulated, branch]


@pytest.mark.parametrize("f", FORMS)
@pytest.mark.parametrize("x", [X, -X])
def test_grad_and_value_against_central_differences(f, x):
    assert_close(s2sad.grad(f)(x), fd_array_grad(f, (x,), 0), rtol=1e-6)
    value, g = s2sad.value_and_grad(f)(x)
    assert value == f(x)
    assert_close(g, fd_array_grad(f, (x,), 0), rtol=1e-6)


@pytest.mark.parametrize("f", FORMS)
def test_vjp_and_jvp_against_central_differences(f):
    expected = fd_array_grad(f, (X,), 0)
    y, pullback = s2sad.vjp(f, X)
    assert y == f(X)
    assert_close(pullback(2.0)[0], 2.0 * expected, rtol=1e-6)
    y, tangent = s2sad.jvp(f, (X,), (V,))
    assert y == f(X)
    assert_close(tangent, float(expected @ V), rtol=1e-6)


@pytest.mark.parametrize("f", FORMS)
def test_hessian_against_central_differences(f):
    assert_close(s2sad.hessian(f)(X), fd_hessian(f, X), rtol=1e-4, atol=1e-6)


def test_an_array_argument_a_helper_fills_is_not_changed_by_a_derivative():
    def f(x, buf):          # (as for an element write into an argument: docs/numpy.md)
        s = fill(x, buf)
        return s + np.sum(buf * x[0])

    buf = np.array([1.0, 2.0, 3.0])
    g = s2sad.grad(f)(X, buf)
    assert_close(buf, [1.0, 2.0, 3.0])
    assert_close(g, fd_array_grad(f, (X, buf.copy()), 0))


def test_what_an_object_was_built_from_stays_readable_after_a_method_rebinds_it():
    def f(x):
        p = Particle(x, x)
        p.step(0.1)         # (rebinds p.pos and p.vel: x itself is not changed)
        return np.sum(x * p.pos) + np.sum(p.vel)

    assert_close(s2sad.grad(f)(X), fd_array_grad(f, (X,), 0))
    assert_close(s2sad.jvp(f, (X,), (V,))[1], float(fd_array_grad(f, (X,), 0) @ V))


def test_a_method_redefined_between_calls_is_compiled_again():
    class Body:
        def __init__(self, pos):
            self.pos = pos

        def move(self, dt):
            self.pos = self.pos * (1.0 + dt)

    def f(x):
        b = Body(x)
        b.move(0.5)
        return np.sum(b.pos ** 2)

    g = s2sad.grad(f)
    assert_close(g(X), fd_array_grad(f, (X,), 0))

    def move(self, dt):
        self.pos = np.sin(self.pos) + dt
    Body.move = move
    assert_close(g(X), fd_array_grad(f, (X,), 0))
    assert_close(s2sad.grad(f)(X), fd_array_grad(f, (X,), 0))


def test_a_method_calling_a_method_that_changes_self():
    class Body:
        def __init__(self, pos, vel):
            self.pos, self.vel = pos, vel

        def kick(self, dt):
            self.vel = self.vel - dt * self.pos

        def step(self, dt):
            self.kick(dt)
            self.pos = self.pos + dt * self.vel
            return np.sum(self.pos)

    def f(x):
        b = Body(x, 0.0 * x)
        s = 0.0
        for _ in range(2):
            t = b.step(0.3)
            s = s + t
        return s * np.sum(b.vel)

    assert_close(s2sad.grad(f)(X), fd_array_grad(f, (X,), 0))
    assert_close(s2sad.jvp(f, (X,), (V,))[1], float(fd_array_grad(f, (X,), 0) @ V))


def test_an_augmented_attribute_of_a_number_is_differentiated():
    class Body:
        def __init__(self, pos, vel):
            self.pos, self.vel = pos, vel

        def step(self, dt):
            self.pos += dt * self.vel
            self.vel *= 1.0 - dt * self.pos

    def f(x):
        b = Body(x[0], x[1])
        for _ in range(3):
            b.step(0.2)
        return b.pos * b.vel

    assert_close(s2sad.grad(f)(X), fd_array_grad(f, (X,), 0))
    assert_close(s2sad.jvp(f, (X,), (V,))[1], float(fd_array_grad(f, (X,), 0) @ V))
    assert_close(s2sad.hessian(f)(X), fd_hessian(f, X), rtol=1e-4, atol=1e-6)


class Cell:
    def __init__(self, v):
        self.v = v

    def meet(self, other):      # changes `self` and the other argument
        self.v = self.v + np.sin(other.v)
        other.v = other.v * self.v


def test_a_method_changing_self_and_another_argument():
    def f(x):
        a = Cell(x)
        b = Cell(x * 3.0)
        a.meet(b)           # (once: the objects it returns are taken as sharing memory)
        return np.sum(a.v * b.v)

    assert_close(s2sad.grad(f)(X), fd_array_grad(f, (X,), 0))
    assert_close(s2sad.jvp(f, (X,), (V,))[1], float(fd_array_grad(f, (X,), 0) @ V))


# -- what stays refused, located ---------------------------------------------------------------
def test_one_object_passed_for_two_arguments_a_call_changes_is_refused():
    def f(x):
        a = Cell(x)
        q = a
        a.meet(q)
        return np.sum(a.v)

    with pytest.raises(s2sad.S2SADError, match=r"a\.meet\(q\): meet\(\) changes its argument "
                       r"'other', which shares memory with its argument 'self'") as e:
        s2sad.grad(f)(X)
    assert e.value.lineno == _line(f, 3)


def test_an_augmented_attribute_holding_an_array_is_refused_at_its_line():
    def f(x):               # NumPy adds in place: `x` itself changes
        p = Particle(x, x)
        p.pos += 1.0
        return np.sum(x)

    class Body:
        def __init__(self, pos):
            self.pos = pos

        def step(self, dt):
            self.pos += dt

    def g(x):
        b = Body(x * 1.0)
        b.step(0.1)
        return np.sum(b.pos)

    with pytest.raises(s2sad.S2SADError, match=r"p\.pos \+= 1\.0: the attribute holds an "
                       r"array, which NumPy changes in place .* \(p\.pos = p\.pos \+ 1\.0\)"
                       ) as e:
        s2sad.grad(f)(X)
    assert e.value.lineno == _line(f, 2)
    with pytest.raises(s2sad.S2SADError, match=r"self\.pos \+= dt: the attribute holds an "
                       r"array") as e:
        s2sad.grad(g)(X)
    assert e.value.lineno == _line(Body.step, 1)


def test_a_call_changing_its_object_inside_an_expression_is_refused_saying_what_to_write():
    def g(x):
        buf = np.zeros(3)
        s = 1.0 + fill(x, buf)
        return s * np.sum(buf)

    with pytest.raises(s2sad.S2SADError, match=r"s = 1\.0 \+ fill\(x, buf\): fill\(\) writes "
                       r"into its argument 'out' .* Call fill\(\.\.\.\) in a statement of its "
                       r"own") as e:
        s2sad.grad(g)(X)
    assert e.value.lineno == _line(g, 2)


def _line(f, k):
    return f.__code__.co_firstlineno + k


def test_another_name_for_the_object_read_after_the_change_is_refused():
    def f(x):
        p = Particle(x, x)
        q = p
        p.step(0.1)
        return np.sum(q.pos)

    with pytest.raises(s2sad.S2SADError, match=r"q is read after line \d+ \(p\.step\(0\.1\)\)"
                       ) as e:
        s2sad.grad(f)(X)
    assert e.value.lineno == _line(f, 4)

    def g(x):
        p = Particle(x, x)
        q = p
        p.pos = x * 2.0
        return np.sum(q.pos)

    with pytest.raises(s2sad.S2SADError, match=r"q is read after line \d+ \(p\.pos = x \* "
                       r"2\.0\) changes an attribute of the object it shares") as e:
        s2sad.grad(g)(X)
    assert e.value.lineno == _line(g, 4)


def test_changing_an_object_the_function_is_given_is_refused():
    def f(p, x):
        p.pos = p.pos * x
        return np.sum(p.pos)

    def g(p, x):
        p.step(x)
        return np.sum(p.pos)

    for h, text in [(f, r"p\.pos = p\.pos \* x"), (g, r"p\.step\(x\)")]:
        with pytest.raises(s2sad.S2SADError, match=text + r" changes an attribute of p, an "
                           r"object \w+\(\) is given") as e:
            s2sad.grad(h, wrt=1)(Particle(X, V), 0.1)
        assert e.value.lineno == _line(h, 1)


def test_changing_an_object_from_outside_the_function_is_refused():
    def f(x):
        OUTSIDE.total = x * 2.0
        return OUTSIDE.total * x

    with pytest.raises(s2sad.S2SADError, match="not one of its variables") as e:
        s2sad.grad(f)(1.5)
    assert e.value.lineno == _line(f, 1)


OUTSIDE = Acc()


def test_an_attribute_of_an_attribute_is_refused_saying_what_to_write():
    def f(x):
        p = Particle(Particle(x, x), x)
        p.pos.vel = x
        return np.sum(p.vel)

    with pytest.raises(s2sad.S2SADError, match="one attribute assignment obj.x = v per line"):
        s2sad.grad(f)(X)


def test_the_numba_backend_refuses_located():
    with pytest.raises(s2sad.S2SADError, match="test_mutating_calls.py"):
        s2sad.grad(stepped_for, backend="numba")(X)


def step_in_a_list(x):
    swarm = [Particle(x, V)]
    swarm[0].step(0.1)                  # the list holds the object the method changes
    return np.sum(swarm[0].pos ** 2)


def step_each_of_a_list(x):
    swarm = [Particle(x, V), Particle(2.0 * x, V)]
    for p in swarm:
        p.step(0.1)
    return np.sum(swarm[0].pos * swarm[1].pos)


class Holder:
    def __init__(self, particle):
        self.particle = particle


def step_held(x):
    h = Holder(Particle(x, V))
    h.particle.step(0.1)
    return np.sum(h.particle.pos)


@pytest.mark.parametrize("f, written", [(step_in_a_list, "swarm[0].step()"),
                                        (step_each_of_a_list, "p.step()"),
                                        (step_held, "h.particle.step()")])
def test_a_method_changing_an_object_a_list_or_an_object_holds_is_refused(f, written):
    """The method is called for what it changes (its result unused) on an object s2sad
    did not bind to a name of its own: the change was lost without a word (the gradient
    of the objects as they were built), now refused at the call's line."""
    lines, first = inspect.getsourcelines(f)
    line = first + next(i for i, text in enumerate(lines)
                        if text.strip().startswith(written.replace("()", "(0.1)")))
    for make in (s2sad.grad, lambda g: (lambda x: s2sad.jvp(g, (x,), (X,)))):
        with pytest.raises(s2sad.UnsupportedSyntaxError,
                           match=rf"test_mutating_calls\.py:{line}:\d+: {re.escape(written)} "
                                 r"is called for what it does.*return a new instance"):
            make(f)(X)
