"""The programs of corpus_python2.py (#36), differentiated as their users would, against
central differences of the function as it is (and, for the SciPy fit, a minimiser found
without s2sad)."""
import numpy as np
import pytest

import corpus_python2 as c
import s2sad


def fd(f, x, h=1e-6):
    """Central differences of `f` at `x` (a float, an array or a list of floats)."""
    if isinstance(x, float):
        return (f(x + h) - f(x - h)) / (2 * h)
    flat = np.array(x, dtype=float)
    g = np.zeros_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e.flat[i] = h
        up, down = flat + e, flat - e
        if isinstance(x, list):
            up, down = list(up), list(down)
        g.flat[i] = (f(up) - f(down)) / (2 * h)
    return g


def test_cnn_with_layer_objects():
    signal = np.array([0.3, -1.0, 0.8, 1.2, -0.4, 0.9, 0.1, -0.7])
    g = s2sad.grad(c.cnn_loss)(signal, 0.5)
    np.testing.assert_allclose(g, fd(lambda s: c.cnn_loss(s, 0.5), signal), rtol=1e-6,
                               atol=1e-8)


def test_model_called_through_dunder_call():
    ts, ys = [0.0, 0.5, 1.0, 1.5], [1.0, 1.2, 2.1, 3.5]
    coeffs = np.array([0.9, 0.1, 0.5, 0.3])
    g = s2sad.grad(c.poly_fit_loss)(coeffs, ts, ys)
    np.testing.assert_allclose(g, fd(lambda w: c.poly_fit_loss(w, ts, ys), coeffs),
                               rtol=1e-6, atol=1e-8)
    y, dot = s2sad.jvp(c.poly_fit_loss, (coeffs, ts, ys), (np.ones(4), [0.0] * 4, [0.0] * 4))
    assert y == c.poly_fit_loss(coeffs, ts, ys)
    assert dot == pytest.approx(np.sum(fd(lambda w: c.poly_fit_loss(w, ts, ys), coeffs)),
                                rel=1e-6)


def test_dict_literal_parameters():
    X = np.array([[0.1, -0.2, 0.3], [0.5, 0.4, -0.1]])
    y = np.array([0.2, -0.3])
    g = s2sad.grad(c.dict_loss)(0.7, X, y)
    assert g == pytest.approx(fd(lambda s: c.dict_loss(s, X, y), 0.7), rel=1e-6)


def test_builtins_and_star_forms():
    returns = [[0.01, 0.03, -0.02], [0.05, 0.0, 0.02], [-0.01, 0.02, 0.01]]
    weights = [0.5, 0.3, 0.2]
    g = s2sad.grad(c.portfolio_risk)(weights, returns)
    assert isinstance(g, list)
    np.testing.assert_allclose(g, fd(lambda w: c.portfolio_risk(w, returns), weights),
                               rtol=1e-6, atol=1e-8)


def test_integrator_with_star_params():
    g = s2sad.grad(c.oscillator_end, wrt=(0, 1))(2.0, 0.3)
    expected = (fd(lambda w: c.oscillator_end(w, 0.3), 2.0),
                fd(lambda d: c.oscillator_end(2.0, d), 0.3))
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def test_maml_through_an_inner_gradient():
    rng = np.random.default_rng(0)
    tasks = [(rng.normal(size=(5, 3)), rng.normal(size=5)) for _ in range(2)]
    w = np.array([0.2, -0.1, 0.4])
    g = s2sad.grad(c.maml_objective)(w, tasks, 0.1)
    np.testing.assert_allclose(g, fd(lambda v: c.maml_objective(v, tasks, 0.1), w),
                               rtol=1e-6, atol=1e-8)


def test_scipy_fit_with_jac_hessp_and_args():
    optimize = pytest.importorskip("scipy.optimize")
    t = np.linspace(0.0, 3.0, 12)
    y = 2.0 * np.exp(-0.7 * t) + 0.5 + 0.01 * np.sin(7 * t)
    args = (t, y, 0.1)
    x0 = np.array([1.0, 1.0, 0.0])
    fit = optimize.minimize(c.huber_fit, x0, args=args, jac=s2sad.grad(c.huber_fit),
                            hessp=s2sad.hessp(c.huber_fit), method="trust-ncg")
    reference = optimize.minimize(c.huber_fit, x0, args=args, method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
    assert fit.success
    np.testing.assert_allclose(fit.x, reference.x, rtol=1e-4, atol=1e-6)
    p = np.array([0.3, -0.2, 0.1])
    hp = s2sad.hessp(c.huber_fit)(fit.x, p, *args)
    g = s2sad.grad(c.huber_fit)
    np.testing.assert_allclose(hp, (g(fit.x + 1e-6 * p, *args) - g(fit.x - 1e-6 * p, *args))
                               / 2e-6, rtol=1e-5, atol=1e-6)


def test_a_model_object_with_has_aux():
    rng = np.random.default_rng(1)
    model = c.TwoLayer(rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4))
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    g, aux = s2sad.grad(c.model_loss, has_aux=True)(model, X, y)
    assert type(g) is c.TwoLayer and g.name == "two-layer"
    assert aux == c.model_loss(model, X, y)[1]
    for field in ("W1", "b1", "W2"):
        def along(v, field=field):
            changed = c.TwoLayer(model.W1, model.b1, model.W2)
            setattr(changed, field, v)
            return c.model_loss(changed, X, y)[0]
        np.testing.assert_allclose(getattr(g, field), fd(along, getattr(model, field)),
                                   rtol=1e-6, atol=1e-8)


def test_a_scipy_objective_with_star_args():
    optimize = pytest.importorskip("scipy.optimize")
    t = np.linspace(0.0, 2.0, 9)
    y = 1.5 * np.exp(-0.8 * t)
    fit = optimize.minimize(c.scipy_objective, np.array([1.0, 0.5]), args=(t, y),
                            jac=s2sad.grad(c.scipy_objective),
                            hessp=s2sad.hessp(c.scipy_objective), method="trust-ncg")
    assert fit.success
    np.testing.assert_allclose(fit.x, [1.5, 0.8], rtol=1e-6)


def test_cnn_whose_layer_objects_are_trained():
    rng = np.random.default_rng(1)
    signals = rng.normal(size=(6, 8))
    targets = np.sin(signals[:, 0])
    net = c.make_net()
    g = s2sad.grad(c.net_loss)(net, signals, targets)
    assert type(g) is c.Net and [type(d) for d in g.layers] == [type(d) for d in net.layers]
    assert g.layers[0].act is np.tanh and g.layers[1].act is np.sin
    for k, name in [(0, "kernel"), (1, "kernel"), (2, "w"), (2, "b")]:
        layer = net.layers[k]
        value = getattr(layer, name)

        def at(v, layer=layer, name=name, value=value):
            setattr(layer, name, v)
            try:
                return c.net_loss(net, signals, targets)
            finally:
                setattr(layer, name, value)
        np.testing.assert_allclose(getattr(g.layers[k], name), fd(at, value), rtol=1e-5,
                                   atol=1e-8)
    for k in (0, 1):
        def at_bias(b, layer=net.layers[k]):
            old, layer.bias = layer.bias, b
            try:
                return c.net_loss(net, signals, targets)
            finally:
                layer.bias = old
        assert g.layers[k].bias == pytest.approx(fd(at_bias, net.layers[k].bias), rel=1e-5)
    losses = c.sgd_train(net, signals, targets)
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.85 * losses[0]
