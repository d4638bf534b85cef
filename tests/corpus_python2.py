"""Programs written as users write them, with the Python of #36 ("the code people write,
part two"): layer objects in a list, a model called through `__call__`, a MAML step that
differentiates through a gradient, parameters as dict literals, builtins that stand for
loops and star forms, and a SciPy fit that passes `jac=`, `hessp=` and `args=`.
tests/test_realistic_python2.py differentiates each against central differences."""
import numpy as np

import s2sad


# -- a small 1-D CNN whose layers are objects in a list ------------------------------------
class Conv1D:
    def __init__(self, kernel):
        self.kernel = kernel

    def forward(self, x):
        k = len(self.kernel)
        return np.array([np.dot(x[i:i + k], self.kernel) for i in range(len(x) - k + 1)])


class Relu:
    def forward(self, x):
        return np.maximum(x, 0.0)


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def forward(self, x):
        return np.dot(self.w, x) + self.b


LAYERS = [Conv1D(np.array([0.5, -0.25, 0.125])), Relu(), Dense(np.linspace(-1.0, 1.0, 6), 0.3)]


def cnn_loss(signal, target):
    h = signal
    for layer in LAYERS:
        h = layer.forward(h)
    return (h - target) ** 2


# -- a model as a callable object ----------------------------------------------------------
class Polynomial:
    def __init__(self, degree):
        self.degree = degree

    def __call__(self, coeffs, t):
        total = 0.0
        for k in range(self.degree + 1):
            total = total + coeffs[k] * t ** k
        return total


POLY = Polynomial(3)


def poly_fit_loss(coeffs, ts, ys):
    residuals = [POLY(coeffs, t) - y for t, y in zip(ts, ys)]
    return sum(r * r for r in residuals) / len(residuals)


# -- dict-literal parameters, built and read by key ----------------------------------------
def init_params(scale):
    return {"w": scale * np.ones(3), "b": 0.5 * scale}


def predict(params, X):
    return np.tanh(X @ params["w"] + params["b"])


def dict_loss(scale, X, y):
    params = init_params(scale)
    shifted = {k: v * 1.5 for k, v in params.items()}
    return np.mean((predict(shifted, X) - y) ** 2) + 0.1 * params.get("b", 0.0) ** 2


# -- builtins that stand for loops, and star forms -----------------------------------------
def portfolio_risk(weights, returns):
    # returns: one list of returns per asset
    means = list(map(lambda r: sum(r) / len(r), returns))
    best = max(range(len(means)), key=lambda i: means[i])
    ranked = sorted(zip(weights, means), key=lambda pair: -pair[1])
    top_weight, *others = [w for w, _ in ranked]
    spread = sum(w * m for w, m in zip(weights, means))
    q, r = divmod(spread * 10.0, 1.0)
    return top_weight * means[best] + sum(o * o for o in others) + r * 0.1


def rk_step(f, state, h, *params):
    k1 = f(state, *params)
    k2 = f(tuple(s + 0.5 * h * d for s, d in zip(state, k1)), *params)
    return tuple(s + h * d for s, d in zip(state, k2))


def oscillator(state, omega, damping):
    x, v = state
    return (v, -omega * omega * x - damping * v)


def oscillator_end(omega, damping):
    state = (1.0, 0.0)
    params = (omega, damping)
    for _ in range(20):
        state = rk_step(oscillator, state, 0.05, *params)
    position, *_ = state
    return position


# -- MAML: one inner gradient step, differentiated through --------------------------------
def task_loss(w, X, y):
    return np.mean((X @ w - y) ** 2)


def maml_objective(w, tasks, inner_lr):
    inner_grad = s2sad.grad(task_loss)
    total = 0.0
    for X, y in tasks:
        adapted = w - inner_lr * inner_grad(w, X, y)
        total = total + task_loss(adapted, X, y)
    return total / len(tasks)


# -- a SciPy fit: jac, hessp and args= ----------------------------------------------------
def huber_fit(theta, t, y, delta):
    pred = theta[0] * np.exp(-theta[1] * t) + theta[2]
    r = pred - y
    small = np.abs(r) <= delta
    return np.sum(np.where(small, 0.5 * r ** 2, delta * (np.abs(r) - 0.5 * delta)))



# -- a model object as the parameter (as equinox or PyTorch modules hold theirs) ----------
class TwoLayer:
    def __init__(self, W1, b1, W2):
        self.W1 = W1
        self.b1 = b1
        self.W2 = W2
        self.name = "two-layer"

    def __call__(self, X):
        return np.tanh(X @ self.W1 + self.b1) @ self.W2


def model_loss(model, X, y):
    pred = model(X)
    loss = np.mean((pred - y) ** 2)
    return loss, {"mean prediction": np.mean(pred), "worst": np.max(np.abs(pred - y))}


def scipy_objective(theta, *args):
    t, y = args
    return np.sum((theta[0] * np.exp(-theta[1] * t) - y) ** 2)


# -- a CNN whose layer objects are the parameters it trains, by SGD -------------------------
class ConvLayer:
    def __init__(self, kernel, bias, act=np.tanh):
        self.kernel = kernel
        self.bias = bias
        self.act = act

    def __call__(self, x):
        k = len(self.kernel)
        out = np.array([np.dot(x[i:i + k], self.kernel) for i in range(len(x) - k + 1)])
        return self.act(out + self.bias)


class Linear:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.w @ x + self.b


class Net:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def net_loss(net, signals, targets):
    total = 0.0
    for x, t in zip(signals, targets):
        total = total + (net(x)[0] - t) ** 2
    return total / len(targets)


def make_net(seed=0):
    rng = np.random.default_rng(seed)
    return Net([ConvLayer(rng.normal(size=3) * 0.5, 0.1),
                ConvLayer(rng.normal(size=2) * 0.5, -0.1, act=np.sin),
                Linear(rng.normal(size=(1, 5)) * 0.5, np.zeros(1))])


def sgd_train(net, signals, targets, steps=8, lr=0.2):
    """Plain SGD as a user writes it: the gradient is a Net whose layers hold the
    gradients of their arrays and numbers; the functions they store are left as they are."""
    step = s2sad.value_and_grad(net_loss)
    losses = []
    for _ in range(steps):
        loss, g = step(net, signals, targets)
        losses.append(loss)
        for layer, dlayer in zip(net.layers, g.layers):
            for name, value in vars(layer).items():
                if isinstance(value, (float, np.ndarray)):
                    setattr(layer, name, value - lr * getattr(dlayer, name))
    return losses
