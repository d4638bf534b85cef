"""Objects in differentiated code: fields of dataclasses and named tuples read and
differentiated (the gradient has the argument's type), plain objects read as constants;
checked against central differences (tests/oracle.py), never against s2sad."""
import dataclasses
import math

import numpy as np
import pytest

import s2sad
import corpus_objects as c
from oracle import assert_close, fd_grad


# -- an independent oracle over structures: perturb one float leaf at a time ------------
def _leaves(x, path=()):
    """(path, value) of the float leaves of `x` (numbers and float array elements)."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return                                  # ints are discrete here
    if isinstance(x, float):
        yield path, x
    elif isinstance(x, np.ndarray):
        if np.issubdtype(x.dtype, np.floating):
            for idx in np.ndindex(x.shape):
                yield path + (("item", idx),), float(x[idx])
    elif isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            yield from _leaves(v, path + (("index", i),))
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, path + (("index", k),))
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            yield from _leaves(getattr(x, f.name), path + (("field", f.name),))


def _get(x, path):
    for how, key in path:
        x = getattr(x, key) if how == "field" else x[key]
    return x


def _with(x, path, value):
    if not path:
        return value
    (how, key), rest = path[0], path[1:]
    if how == "field":
        return dataclasses.replace(x, **{key: _with(getattr(x, key), rest, value)})
    if how == "item":
        out = x.copy()
        out[key] = value
        return out
    if isinstance(x, dict):
        return {**x, key: _with(x[key], rest, value)}
    items = list(x)
    items[key] = _with(x[key], rest, value)
    return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)


def fd_structure(f, args, i):
    """{path: d f / d leaf} over the float leaves of args[i]."""
    out = {}
    for path, v in _leaves(args[i]):
        def along(t, path=path):
            a = list(args)
            a[i] = _with(args[i], path, t)
            return f(*a)
        out[path] = fd_grad(along, (v,))
    return out


def check_structure(grad, f, args, i=0, rtol=1e-6):
    """`grad` has the type of args[i] and its leaves match central differences."""
    assert type(grad) is type(args[i])
    for path, expected in fd_structure(f, args, i).items():
        assert_close(float(_get(grad, path)), expected, rtol=rtol, atol=1e-8)


# -- reverse mode -----------------------------------------------------------------------
@pytest.mark.parametrize("make", [c.Point, c.Pair, c.Frozen], ids=["dataclass", "namedtuple",
                                                                   "frozen"])
@pytest.mark.parametrize("fn", [c.product, c.reads_twice, c.builtin_getattr])
def test_gradient_has_the_argument_type(make, fn):
    p = make(0.7, -1.3)
    check_structure(s2sad.grad(fn)(p), fn, (p,))


def test_gradient_of_frozen_dataclass_skips_post_init():
    p = c.Frozen(0.5, 2.0)
    g = s2sad.grad(lambda_free_neg)(p)       # negative gradient: __post_init__ would refuse
    assert isinstance(g, c.Frozen) and g.a == pytest.approx(-2.0) and g.b == -0.5


def lambda_free_neg(p):
    return -p.a * p.b


def test_vjp_and_value_and_grad_with_a_dataclass():
    p = c.Point(0.3, 2.0)
    y, pullback = s2sad.vjp(c.product, p)
    assert y == pytest.approx(c.product(p))
    (g,) = pullback(2.0)
    check_structure(g, lambda q: 2.0 * c.product(q), (p,))
    value, g = s2sad.value_and_grad(c.product)(p)
    assert value == pytest.approx(c.product(p))
    check_structure(g, c.product, (p,))


def test_nested_model_with_arrays_ints_strings_and_unread_fields():
    rng = np.random.default_rng(0)
    m = c.Model([c.Layer(rng.normal(size=(3, 2)), rng.normal(size=3)),
                 c.Layer(rng.normal(size=(2, 3)), rng.normal(size=2))],
                scale=0.5, n=3, name="net", mask=np.array([1, 0, 1]))
    x = rng.normal(size=2)
    g = s2sad.grad(c.mlp)(m, x)
    check_structure(g, c.mlp, (m, x))
    assert isinstance(g.layers, list) and isinstance(g.layers[0], c.Layer)
    # fields that carry no derivative get None; an unread float field gets zero
    assert g.n is None and g.name is None and g.mask is None and g.unused == 0.0
    gx = s2sad.grad(c.mlp, wrt=1)(m, x)
    assert_close(tuple(gx), tuple(fd_grad(lambda *v: c.mlp(m, np.array(v)), tuple(x),
                                          wrt=(0, 1))), rtol=1e-6)
    assert m.layers[0].w.shape == (3, 2) and m.name == "net"     # inputs untouched


def test_containers_of_records():
    ps = [c.Pair(1.0, 2.0), c.Pair(-0.5, 0.25)]
    g = s2sad.grad(c.pairs)(ps, 1.5)
    check_structure(g, c.pairs, (ps, 1.5))
    assert all(type(p) is c.Pair for p in g)
    d = {"p": c.Point(2.0, 3.0), "q": c.Point(5.0, 7.0)}
    g = s2sad.grad(c.in_dict)(d)
    assert g == {"p": c.Point(7.0, 0.0), "q": c.Point(0.0, 2.0)}


def test_fields_read_in_a_loop():
    p = c.Point(0.4, -0.2)
    g = s2sad.grad(c.loop_reads)(p, 4)
    assert g == c.Point(pytest.approx(0 + 1 + 2 + 3), pytest.approx(4.0))


def test_generated_code_reads_the_field_and_routes_its_adjoint():
    text = s2sad.source(c.product, at=(c.Point(1.0, 2.0),))
    # p.a is read twice, once at the top (record_fields): one adjoint, one field write
    assert "t = p.a" in text and "t_bar = y_bar * cos(t) + y_bar * t_1" in text
    assert text.count("= p.a") == 1 and "_s2s_unattr(t_bar, p, 'a')" in text
    # the two contributions to p_bar add field by field; float fields: no unbroadcast
    assert "p_bar = _s2s_add(_s2s_unattr(" in text and "unbroadcast" not in text


def test_field_types_are_specialised_on():
    df = s2sad.grad(c.summed)
    p = c.Point(0.5, 2.0)
    check_structure(df(p), c.summed, (p,))
    assert "p.a.__class__ is not float" in df.source
    q = c.Point(np.array([0.5, -1.0, 3.0]), 2.0)        # now an array field: recompiled
    check_structure(df(q), c.summed, (q,))
    assert isinstance(df(q).a, np.ndarray) and isinstance(df(q).b, float)
    check_structure(df(p), c.summed, (p,))


# -- plain objects as constants ---------------------------------------------------------
def test_plain_objects_global_argument_and_callable():
    x = 0.8
    assert s2sad.grad(c.uses_global_object)(x) == pytest.approx(6.0)
    assert s2sad.grad(c.uses_object_argument, wrt=1)(c.plain, x) == pytest.approx(
        fd_grad(lambda t: c.uses_object_argument(c.plain, t), (x,)), rel=1e-7)
    assert s2sad.grad(c.calls_objects)(x) == pytest.approx(
        fd_grad(c.calls_objects, (x,)), rel=1e-7)
    assert s2sad.grad(c.plain.apply)(x) == pytest.approx(6.0 * x)


def test_method_called_through_its_class():
    p = c.WithMethod(1.5, -0.5)
    check_structure(s2sad.grad(c.calls_method_by_class)(p), c.calls_method_by_class, (p,))


# -- forward mode -----------------------------------------------------------------------
@pytest.mark.parametrize("make", [c.Point, c.Pair])
def test_jvp_tangent_of_the_same_type(make):
    p, v = make(0.7, -1.3), make(0.3, 2.0)
    y, y_dot = s2sad.jvp(c.product, (p,), (v,))
    assert y == pytest.approx(c.product(p))
    expected = fd_grad(lambda t: c.product(make(p.a + t * v.a, p.b + t * v.b)), (0.0,))
    assert y_dot == pytest.approx(expected, rel=1e-7)


def test_jvp_with_a_model_left_out():
    y, y_dot = s2sad.jvp(c.uses_object_argument, (c.plain, 0.8), (None, 1.0))
    assert y == pytest.approx(c.uses_object_argument(c.plain, 0.8))
    assert y_dot == pytest.approx(3.0 + 2 * 2.0 * 0.8)


def test_forward_source_reads_the_tangent_field():
    text = s2sad.source(c.product, mode="forward", at=(c.Point(1.0, 2.0),))
    assert "t_dot = p_dot.a" in text


def test_differentiating_a_plain_object_gives_an_object_of_its_class():
    # (a plain class is taken apart by its attributes: tests/test_plain_classes.py)
    g = s2sad.grad(c.uses_object_argument)(c.plain, 0.5)
    assert type(g) is c.Plain
    assert (g.w, g.scale) == pytest.approx((0.5 ** 2, 0.5))


# -- what stays refused -----------------------------------------------------------------


def test_method_call_on_a_differentiated_record():
    p = c.WithMethod(1.0, 2.0)
    g = s2sad.grad(c.calls_method_on_value)(p)
    assert (g.a, g.b) == pytest.approx((2.0, 4.0))      # d(a^2 + b^2) = (2a, 2b)
    _, y_dot = s2sad.jvp(c.calls_method_on_value, (p,), (c.WithMethod(0.5, -1.0),))
    assert y_dot == pytest.approx(2.0 * 0.5 - 4.0)


def test_jvp_needs_one_tangent():
    with pytest.raises(s2sad.S2SADError, match="not None"):
        s2sad.jvp(c.product, (c.Point(1.0, 2.0),), (None,))


def test_math_is_unchanged_for_floats():
    assert s2sad.grad(lambda_free_neg)(c.Pair(3.0, 4.0)) == c.Pair(-4.0, -3.0)
    assert math.isclose(s2sad.grad(c.product)(c.Pair(0.0, 1.0)).a, 2.0)


def test_cli_show_forward_calls_the_custom_jvp_rule(capsys):
    import os
    from s2sad import cli
    path = os.path.join(os.path.dirname(__file__), "corpus_custom.py")
    assert cli.main(["show", f"{path}:radius", "--mode", "forward"]) == 0
    assert "safe_sqrt_jvp((x * x + y * y,), (2 * x_dot * x,))" in capsys.readouterr().out


def test_attribute_of_a_differentiated_array_is_a_located_error():
    with pytest.raises(s2sad.MissingRuleError) as info:
        s2sad.grad(c.first_plus)(np.ones(3))
    line = c.first_plus.__code__.co_firstlineno + 1
    assert f"corpus_objects.py:{line}: reading the attribute .flat of a differentiated " \
           "array" in str(info.value)


def test_named_tuple_fields_without_a_derivative_get_none():
    import collections
    Sample = collections.namedtuple("Sample", "x count label")
    s = Sample(1.5, 3, "a")
    g = s2sad.grad(c.scaled_sample)(s)
    assert type(g) is Sample and g.count is None and g.label is None
    assert g.x == pytest.approx(fd_grad(lambda t: c.scaled_sample(Sample(t, 3, "a")), (1.5,)))


def test_jvp_through_a_list_of_named_tuples():
    ps = [c.Pair(1.0, 2.0), c.Pair(-0.5, 0.25)]
    dps = [c.Pair(0.3, -1.0), c.Pair(2.0, 0.5)]
    y, y_dot = s2sad.jvp(c.pairs, (ps, 1.5), (dps, 0.0))
    along = lambda t: c.pairs([c.Pair(p.a + t * d.a, p.b + t * d.b)  # noqa: E731
                               for p, d in zip(ps, dps)], 1.5)
    assert y == pytest.approx(c.pairs(ps, 1.5))
    assert y_dot == pytest.approx(fd_grad(along, (0.0,)), rel=1e-7)


def test_hessian_with_a_model_argument_left_out():
    h = s2sad.hessian(c.uses_object_argument, wrt=1)(c.plain, 0.8)
    assert h == pytest.approx(2 * c.plain.w)


# -- fields read once (before_ad/record_fields.py) --------------------------------------------
def _energy_of(p, x):
    return p.a * x + p.b


def passes_the_record_on(p):
    s = 0.0
    for i in range(3):
        s = s + _energy_of(p, p.a * i) * p.b
    return s


def reads_fields_in_a_loop(p):
    s = 0.0
    for i in range(3):
        s = s + p.a * math.sin(p.b * i)
    return s * p.a


@pytest.mark.parametrize("f", [passes_the_record_on, reads_fields_in_a_loop])
def test_fields_read_once_or_in_place_give_the_gradient(f):
    # a record passed on to a function is left as it is; one only read is read once
    p = c.Point(0.7, -1.3)
    got = s2sad.grad(f)(p)
    h = 1e-6
    for field in ("a", "b"):
        up = dataclasses.replace(p, **{field: getattr(p, field) + h})
        down = dataclasses.replace(p, **{field: getattr(p, field) - h})
        assert getattr(got, field) == pytest.approx((f(up) - f(down)) / (2 * h), rel=1e-6)
    _, tangent = s2sad.jvp(f, (p,), (c.Point(1.0, 0.5),))
    up, down = c.Point(0.7 + h, -1.3 + 0.5 * h), c.Point(0.7 - h, -1.3 - 0.5 * h)
    assert tangent == pytest.approx((f(up) - f(down)) / (2 * h), rel=1e-6)
    text = s2sad.source(f, at=(p,))
    loop = text.index("for i in range(3):")
    if f is reads_fields_in_a_loop:             # read once, before the loop
        assert text.count("= p.a") == 1 and text.index("= p.a") < loop, text
    else:                                       # p is passed on: read where it was
        assert text.index("= p.a") > loop, text
