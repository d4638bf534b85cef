"""s2sad.export and `s2sad export`: derivatives written as modules of their own, run in a
virtual environment that has NumPy and no s2sad, and compared with s2sad's own results
and with central finite differences."""
import ast
import dataclasses
import json
import math
import os
import shlex
import subprocess
import sys
import textwrap
import venv

import numpy as np
import pytest

import s2sad
from s2sad import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL = '''\
import dataclasses
import math

import numpy as np
import s2sad

SHIFT = 0.25
WEIGHTS = np.array([1.0, -0.5])


def babysqrt(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def cube_root(a):
    """a ** (1/3) by Newton's method: a while loop whose trip count depends on a."""
    x = a
    while abs(x * x * x - a) > 1e-13 * a:
        x = x - (x * x * x - a) / (3 * x * x)
    return x * math.sin(a)


def logistic(w, b, X, y):
    Xc = X - np.mean(X, axis=0)
    z = Xc @ w + b
    return np.mean(np.log1p(np.exp(-y * z))) + 0.01 * np.sum(w * w)


def mlp(W1, b1, W2, X, t):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - t
    return np.sum(r ** 2) / X.shape[0] + np.max(np.abs(W2))


def inner(a, b):
    return a * math.exp(b) + SHIFT


def terms(x):
    return 2 + int(x > 0.5)


@s2sad.custom_vjp
def softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def softplus_fwd(x):
    return softplus(x), x


def softplus_bwd(x, g):
    return (g / (1 + math.exp(-x)),)


softplus.defvjp(softplus_fwd, softplus_bwd)


def calls(x, y):
    s = 0.0
    for i in range(terms(x)):
        s = s + inner(x, y * i)
    return s + softplus(x * y) + WEIGHTS[0] * x


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: float


def layer_loss(layer, X):
    return np.sum(np.tanh(X @ layer.W + layer.b) ** 2)


def spring(x, k):
    energy = lambda d: 0.5 * k * d * d
    def pair(i):
        return energy(x * i - 1.0)
    return pair(1) + pair(2)


def scatter(x, v):
    y = x * 1.0
    y[[0, 0, 2]] = v            # row 0 written twice: the second write stays
    return np.sum(np.sin(y) * WEIGHTS[0])
'''

RNG = np.random.default_rng(7)

#: (case, function, arguments, wrt, mode)
CASES = [
    ("scalar_loop", "babysqrt", (2.0,), 0, "reverse"),
    ("while_loop", "cube_root", (1.7,), 0, "reverse"),
    ("numpy_loss", "logistic", (RNG.normal(size=3), 0.3, RNG.normal(size=(6, 3)),
                                np.sign(RNG.normal(size=6))), (0, 1), "reverse"),
    ("mlp", "mlp", (RNG.normal(size=(3, 4)), RNG.normal(size=(1, 4)), RNG.normal(size=4),
                    RNG.normal(size=(5, 3)), RNG.normal(size=5)), (0, 1, 2), "reverse"),
    ("calls", "calls", (0.7, 0.4), (0, 1), "reverse"),
    ("nested", "spring", (0.3, 2.0), (0, 1), "reverse"),
    ("dataclass", "layer_loss", ("Layer", RNG.normal(size=(3, 2)), 0.2), 0, "reverse"),
    ("repeated_writes", "scatter", (RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))), (0, 1),
     "reverse"),
    ("forward_loop", "babysqrt", (2.0,), 0, "forward"),
    ("forward_calls", "calls", (0.7, 0.4), (0, 1), "forward"),
    ("forward_mlp", "mlp", (RNG.normal(size=(3, 4)), RNG.normal(size=(1, 4)),
                            RNG.normal(size=4), RNG.normal(size=(5, 3)), RNG.normal(size=5)),
     (0, 2), "forward"),
]

#: Runs in the virtual environment: imports each exported module, calls its derivatives
#: at the arguments and writes what they return (and what a call with an int raises).
CHECKER = '''
import importlib.util, json, sys
import numpy as np


def value(v, module):
    if "record" in v:       # an instance of the module's copy of the user's class
        return getattr(module, v["record"])(**{k: value(f, module) for k, f in v["fields"].items()})
    return np.array(v["array"]) if "array" in v else v["number"]


def plain(x):
    if isinstance(x, tuple):
        return [plain(v) for v in x]
    if hasattr(x, "__dataclass_fields__"):
        return {"fields": {k: plain(getattr(x, k)) for k in x.__dataclass_fields__}}
    return {"array": np.asarray(x).tolist()} if isinstance(x, np.ndarray) else float(x)


spec = json.load(open(sys.argv[1]))
out = {"s2sad importable": importlib.util.find_spec("s2sad") is not None}
for case in spec:
    loader = importlib.util.spec_from_file_location(case["module"], case["path"])
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    out[case["module"] + " modules"] = sorted(m for m in sys.modules if m.startswith("s2sad"))
    args = [value(a, module) for a in case["args"]]
    name = case["function"]
    if case["mode"] == "forward":
        tangents = [value(t, module) for t in case["tangents"]]
        out[case["name"]] = {"jvp": plain(getattr(module, name + "_jvp")(*args, *tangents))}
        continue
    y, pullback = getattr(module, name + "_vjp")(*args)
    out[case["name"]] = {
        "vjp": plain((y, pullback(1.0))),
        "grad": plain(getattr(module, name + "_grad")(*args)),
        "value_and_grad": plain(getattr(module, name + "_value_and_grad")(*args)),
    }
    wrong = [int(a) if isinstance(a, float) else a[..., None] if isinstance(a, np.ndarray)
             else None for a in args]
    try:
        getattr(module, name + "_grad")(*wrong)
        out[case["name"]]["wrong"] = "no error"
    except TypeError as exc:
        out[case["name"]]["wrong"] = str(exc)
print(json.dumps(out))
'''


def _load(directory, name="model"):
    path = directory / f"{name}.py"
    if not path.exists():
        path.write_text(MODEL)
    return path


def _written(x):
    if dataclasses.is_dataclass(x):
        return {"record": type(x).__name__, "fields": {
            f.name: _written(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    return {"array": x.tolist()} if isinstance(x, np.ndarray) else {"number": x}


def _read(x, like=None):
    if isinstance(x, list):
        return tuple(_read(v) for v in x)
    if isinstance(x, dict) and "fields" in x:   # as an instance of the class of `like`
        return type(like)(**{k: _read(v) for k, v in x["fields"].items()})
    if isinstance(x, dict):
        return np.array(x["array"]) if "array" in x else x["number"]
    return x


def _flat(x):
    """The arrays and numbers of `x` (a tuple, a dataclass, an array or a number)."""
    if isinstance(x, tuple):
        return tuple(v for item in x for v in _flat(item))
    if dataclasses.is_dataclass(x):
        return tuple(getattr(x, f.name) for f in dataclasses.fields(x))
    return (x,)


def _close(a, b, rtol, atol):
    a, b = _flat(a), _flat(b)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def _central(fn, args, i, h=1e-6):
    """The gradient of f with respect to argument i, by central differences (float64)."""
    record = args[i]
    if dataclasses.is_dataclass(record):          # field by field

        def along(name):
            def g(*a):
                return fn(*a[:i], dataclasses.replace(record, **{name: a[i]}), *a[i + 1:])
            return _central(g, args[:i] + (getattr(record, name),) + args[i + 1:], i, h)
        return type(record)(**{f.name: along(f.name) for f in dataclasses.fields(record)})
    x = np.asarray(args[i], dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = h * max(1.0, abs(float(x[idx])))
        values = []
        for sign in (1, -1):
            moved = x.copy()
            moved[idx] += sign * step
            a = list(args)
            a[i] = moved if x.shape else float(moved)
            values.append(fn(*a))
        out[idx] = (values[0] - values[1]) / (2 * step)
    return out if x.shape else float(out)


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory):
    """The Python of a virtual environment without s2sad (nor the site-packages of this
    one), with NumPy installed: made once for the module (about 10 s)."""
    where = tmp_path_factory.mktemp("venv")
    venv.create(where, with_pip=True, system_site_packages=False)
    python = str(where / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         f"numpy=={np.__version__}"], capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        pytest.skip(f"cannot install numpy into a fresh virtual environment (offline?): "
                    f"{installed.stderr.strip().splitlines()[-1:]}")
    return python


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{case: (path of the exported module, its text, the function, the spec)}."""
    directory = tmp_path_factory.mktemp("export")
    model = _load(directory)
    out = {}
    for name, function, args, wrt, mode in CASES:
        fn = cli.load(f"{model}:{function}")
        if isinstance(args[0], str):    # an instance of the user's dataclass
            args = (fn.__globals__["Layer"](args[1], args[2]), RNG.normal(size=(4, 3)))
        path = directory / f"{name}_derivatives.py"
        text = s2sad.export(fn, path, mode=mode, wrt=wrt, args=args)
        out[name] = (path, text, fn, args, wrt, mode)
    return out


def test_exported_modules_run_without_s2sad_and_agree(exported, clean_python, tmp_path):
    spec = []
    for name, (path, _, fn, args, wrt, mode) in exported.items():
        entry = {"name": name, "module": path.stem, "path": str(path),
                 "function": fn.__name__, "mode": mode, "args": [_written(a) for a in args]}
        if mode == "forward":
            wrts = wrt if isinstance(wrt, tuple) else (wrt,)
            entry["tangents"] = [_written(np.ones_like(args[i]) * 0.5 if isinstance(
                args[i], np.ndarray) else 0.5) for i in wrts]
        spec.append(entry)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "checker.py").write_text(CHECKER)
    run = subprocess.run([clean_python, str(tmp_path / "checker.py"),
                          str(tmp_path / "spec.json")], capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path), env={"PATH": os.environ["PATH"]})
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["s2sad importable"] is False       # the environment really has no s2sad
    for entry in spec:
        assert results[entry["module"] + " modules"] == []
        name = entry["name"]
        _, _, fn, args, wrt, mode = exported[name]
        got = results[name]
        wrts = wrt if isinstance(wrt, tuple) else (wrt,)
        if mode == "forward":
            tangents = tuple(_read(t) for t in entry["tangents"])
            y, y_dot = _read(got["jvp"])
            y_ref, y_dot_ref = s2sad.jvp(fn, args, tuple(
                tangents[wrts.index(i)] if i in wrts else np.zeros_like(a) * 0.0
                if isinstance(a, np.ndarray) else 0.0 for i, a in enumerate(args)))
            _close(y, y_ref, 1e-12, 1e-14)
            _close(y_dot, y_dot_ref, 1e-12, 1e-14)
            fd = sum(np.sum(_central(fn, args, i) * t) for i, t in zip(wrts, tangents))
            _close(y_dot, fd, 1e-6, 1e-8)
            continue
        reference = s2sad.grad(fn, wrt=wrt)(*args)
        fd = tuple(_central(fn, args, i) for i in wrts)
        fd = fd if isinstance(wrt, tuple) else fd[0]
        like = args[wrts[0]]
        value, pulled = _read(got["vjp"][0]), _read(got["vjp"][1], like)
        value_2, gradient = _read(got["value_and_grad"][0]), _read(got["value_and_grad"][1], like)
        for g in (_read(got["grad"], like), pulled, gradient):
            _close(g, reference, 1e-12, 1e-14)
            _close(g, fd, 1e-6, 1e-8)
        _close(value, fn(*args), 1e-12, 1e-14)
        _close(value_2, fn(*args), 1e-12, 1e-14)
        # arguments of other types: a clear error, not a wrong result
        assert got["wrong"].startswith(f"{fn.__name__}_grad() was exported for "), got["wrong"]
        assert ("Export it again for such arguments: s2sad export " if name != "dataclass"
                else "Export it again for such arguments: s2sad.export(layer_loss") in got["wrong"]


def test_exported_modules_import_nothing_of_s2sad(exported):
    for name, (_, text, *_) in exported.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "s2sad" for a in node.names), name
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0 and (node.module or "").split(".")[0] != "s2sad", name
            elif isinstance(node, ast.Name):
                assert node.id != "s2sad", name


def test_the_module_holds_what_the_derivatives_call(exported):
    _, text, *_ = exported["calls"]
    tree = ast.parse(text)
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # the derivatives, the callee's, the user's functions the code calls (the custom rule's
    # fwd and bwd, and the primal they call, without its decorator), runtime helpers with
    # the helpers and constants they read, and the standalone exception classes
    assert {"calls_vjp", "calls_grad", "calls_value_and_grad", "inner_vjp", "softplus_fwd",
            "softplus_bwd", "softplus", "_s2s_unbroadcast", "_s2s_respecialize"} <= defined
    assert "@s2sad" not in text and "import math\n" in text and "import numpy as np\n" in text
    assert "\nSHIFT = 0.25\n" in text
    assert "\nWEIGHTS = np.array([1.0, -0.5], dtype=np.float64)\n" in text
    assert "\n_S2S_NUMBERS = frozenset([float, int, np.float64])\n" in text
    assert "class MissingRuleError(S2SADError):" in text
    header = ast.get_docstring(tree)
    assert header.startswith("Derivatives of calls() from model.py, line ")
    assert "with respect to x, y, for x (float), y (float):" in header
    assert "calls_grad(x, y) -> (x_bar, y_bar)" in header
    assert "s2sad export " in header and "model.py:calls -o " in header
    assert "--wrt x,y --at 0.7 0.4" in header
    # forward mode: a callee's jvp takes its tangents by name, as s2sad passes them
    _, forward, *_ = exported["forward_calls"]
    assert "inner_jvp(x, y * i, a_dot=x_dot, b_dot=y_dot * i)" in forward


def test_export_is_deterministic(tmp_path):
    fn = cli.load(f"{_load(tmp_path)}:calls")
    assert s2sad.export(fn, wrt=(0, 1)) == s2sad.export(fn, wrt=(0, 1))


REFUSED = '''\
import math
import s2sad

scale = lambda v: 2.0 * v


def make():
    k = 3.0
    def inner(v):
        return k * v
    return inner


triple = make()


class Model:
    pass


model = Model()


@s2sad.checkpoint
def step(u, kappa):
    return u + kappa * math.sin(u)


def uses_lambda(x):
    n = int(scale(x))
    return x * n


def uses_closure(x):
    n = int(triple(x))
    return x * n


def uses_object(x):
    return x * x + len(str(model))


def uses_checkpoint(u, kappa):
    for i in range(3):
        u = step(u, kappa)
    return u


class Scaler:
    def __init__(self, a):
        self.a = a

    def scale(self, x):
        return self.a * x


scaler = Scaler(2.0)


def uses_method(x):
    return scaler.scale(x) ** 2
'''


@pytest.mark.parametrize("function, message", [
    ("uses_lambda", r"refused.py:\d+: the derivative of uses_lambda\(\) reads 'scale', a "
                    r"lambda \(.*refused.py:4\), which an exported module cannot copy"),
    ("uses_closure", r"refused.py:\d+: the derivative of uses_closure\(\) reads 'triple', a "
                     r"function nested in another \(.*refused.py:9\).*as arguments"),
    ("uses_object", r"reads 'model', a Model object, which an exported module cannot "
                    r"write as source.*as an argument"),
    ("uses_checkpoint", r"reads 'step_checkpoint_fwd'.*without s2sad.checkpoint"),
    ("uses_method", r"refused.py:\d+: the derivative of uses_method\(\) calls that of "
                    r"Scaler.scale\(\) with values bound to it.*as arguments instead"),
])
def test_what_cannot_be_exported_is_refused_with_where_and_how(tmp_path, function, message):
    (tmp_path / "refused.py").write_text(REFUSED)
    fn = cli.load(f"{tmp_path / 'refused.py'}:{function}")
    args = (0.3, 0.1) if function == "uses_checkpoint" else (0.3,)
    with pytest.raises(s2sad.ExportError, match=message):
        s2sad.export(fn, args=args)


def test_options_that_are_not_available_are_refused(tmp_path):
    fn = cli.load(f"{_load(tmp_path)}:babysqrt")
    with pytest.raises(s2sad.ExportError, match="backend='fortran'.*backend='numba'"):
        s2sad.export(fn, backend="fortran")
    with pytest.raises(s2sad.ExportError, match="forward mode exports jvp"):
        s2sad.export(fn, mode="forward", kind="grad")
    with pytest.raises(s2sad.ExportError, match="mode is 'reverse' or 'forward'"):
        s2sad.export(fn, mode="sideways")


def _cli(*args, cwd=ROOT):
    """`s2sad ARGS` run in `cwd`, with the s2sad of this tree."""
    path = os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": path})


def test_cli_writes_the_module_and_its_header_regenerates_it(tmp_path):
    _load(tmp_path)
    # (--args, the old spelling of --at, is the same option)
    out = _cli("export", "model.py:logistic", "-o", "loss_grad.py", "--wrt", "w,b",
               "--kind", "grad", "--args", "[0.5, 1.0, 2.0]", "0.1", "[[1.0, 2.0, 3.0], "
               "[4.0, 5.0, 6.5]]", "[1.0, -1.0]", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "wrote loss_grad.py\n"
    text = (tmp_path / "loss_grad.py").read_text()
    command = ("s2sad export model.py:logistic -o loss_grad.py --wrt w,b --kind grad --at "
               "'[0.5, 1.0, 2.0]' 0.1 '[[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]' '[1.0, -1.0]'")
    assert f"\n    {command}\n" in text
    assert "def logistic_grad(w, b, X, y):" in text and "def logistic_vjp" not in text
    assert "w (float64 array of shape (*,)), b (float)" in text
    again = _cli(*command.replace("'", "").split(" ")[1:5], "--wrt", "w,b", "--kind", "grad",
                 "--at", "[0.5, 1.0, 2.0]", "0.1", "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]",
                 "[1.0, -1.0]", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "loss_grad.py").read_text() == text
    printed = _cli("export", "model.py:babysqrt", "--mode", "forward", cwd=tmp_path)
    assert printed.returncode == 0 and "def babysqrt_jvp(x, x_dot):" in printed.stdout
    bad = _cli("export", "model.py:babysqrt", "--at", "two", cwd=tmp_path)
    assert bad.returncode == 2 and "--at takes numbers" in bad.stderr
    many = _cli("export", "model.py:babysqrt", "--args", "2.0", "3.0", cwd=tmp_path)
    assert many.returncode == 2, many.stdout
    assert "babysqrt() takes at most 1 positional value(s), but --at gave 2" in many.stderr


TRAJECTORY = """\
import numpy as np


def trajectory(k, observed):
    t = np.linspace(0.0, 1.0, observed.shape[0])
    return np.sum((np.exp(-k * t) - observed) ** 2)
"""


def test_the_type_error_of_other_arguments_gives_the_command_that_exports_for_them(tmp_path):
    (tmp_path / "traj.py").write_text(TRAJECTORY)
    out = _cli("export", "traj.py:trajectory", "-o", "traj_grad.py", "--kind", "grad",
               "--at", "[0.0, 0.0]", "[0.0, 0.0]", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    call = ("import sys, numpy as np, traj_grad\n"
            "try:\n"
            "    print(traj_grad.trajectory_grad(1.3, np.array([1.0, 0.5, 0.2])))\n"
            "except TypeError as error:\n"
            "    sys.exit(str(error))\n")
    refused = subprocess.run([sys.executable, "-c", call], cwd=tmp_path, capture_output=True,
                             text=True)
    assert refused.returncode == 1
    command = refused.stderr.strip().rpartition("Export it again for such arguments: ")[2]
    assert command == ("s2sad export traj.py:trajectory -o traj_grad.py --kind grad --at 1.3 "
                       "'[0.0, 0.0]'")
    again = _cli(*shlex.split(command)[1:], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    run = subprocess.run([sys.executable, "-c", call], cwd=tmp_path, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    observed, h = np.array([1.0, 0.5, 0.2]), 1e-6
    t = np.linspace(0.0, 1.0, 3)

    def f(k):
        return np.sum((np.exp(-k * t) - observed) ** 2)
    assert float(run.stdout) == pytest.approx((f(1.3 + h) - f(1.3 - h)) / (2 * h), rel=1e-7)
    listed = subprocess.run([sys.executable, "-c", call.replace("np.array([1.0, 0.5, 0.2])",
                                                                "[1.0, 0.5, 0.2]")],
                            cwd=tmp_path, capture_output=True, text=True)
    # a list: no --at can write it, the message gives the command as it was
    assert listed.stderr.strip().endswith("observed (list). Export it again for such "
                                          "arguments: " + command)


def test_cli_docs_show_the_real_export(tmp_path):
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        doc = f.read()
    start = doc.index("```python\n", doc.index("Here `softplus_loss.py` holds:")) + len(
        "```python\n")
    (tmp_path / "softplus_loss.py").write_text(doc[start:doc.index("```", start)])
    command = "$ s2sad export softplus_loss.py:loss -o loss_jvp.py --mode forward --at 0.5\n"
    start = doc.index(command) + len(command)
    shown = doc[start:doc.index("```", start)]
    out = _cli(*command.split()[2:], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert shown == out.stdout + "$ cat loss_jvp.py\n" + (tmp_path / "loss_jvp.py").read_text()
    run = subprocess.run([sys.executable, "-c", "import loss_jvp; print(loss_jvp.loss_jvp(0.5, "
                          "1.0))"], cwd=tmp_path, capture_output=True, text=True)
    value, slope = ast.literal_eval(run.stdout)
    # loss = softplus(3 w) w: loss' = 3 w sigmoid(3 w) + softplus(3 w)
    sigmoid = 1 / (1 + math.exp(-1.5))
    assert value == pytest.approx(math.log1p(math.exp(1.5)) * 0.5, rel=1e-14)
    assert slope == pytest.approx(1.5 * sigmoid + math.log1p(math.exp(1.5)), rel=1e-14)


def test_renaming_follows_python_scopes_and_keeps_the_text():
    from s2sad.export_names import renamed
    text = textwrap.dedent('''\
        class Box:
            scale = 2.0                       # a class attribute, not the global
            def area(self, w):
                return ("∂", scale * w * Box.scale)   # columns are characters, not bytes
        def f(x, scale=scale):
            g = lambda scale: scale + x       # a parameter of the lambda
            return [scale * v for v in (x,)] + [g(1.0)]
        ''')
    out = renamed(text, {"scale": "SCALE", "Box": "Box_1"})
    assert out == textwrap.dedent('''\
        class Box_1:
            scale = 2.0                       # a class attribute, not the global
            def area(self, w):
                return ("∂", SCALE * w * Box_1.scale)   # columns are characters, not bytes
        def f(x, scale=SCALE):
            g = lambda scale: scale + x       # a parameter of the lambda
            return [scale * v for v in (x,)] + [g(1.0)]
        ''')


# -- the numba backend -------------------------------------------------------------------
NUMBA_MODEL = """\
import math

import numpy as np

H = 0.01


def babysqrt(x):
    t = (1 + x) / 2
    for i in range(1000):
        t = (t + x / t) / 2
    return t


def lotka_volterra(a, b, c, d):
    u = 1.0
    v = 1.0
    for i in range(400):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + H * du
        v = v + H * dv
    return u * v


def shrink(x):
    y = x
    while y > 1.0:
        y = y / 1.1 + 0.01 * math.sin(y)
    return y * x


def decay(k, n):
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] * u[i]
    return u[n - 1]


def inner(a, b):
    return a * math.exp(-b) + math.sin(a * b)


def outer(x, y):
    return inner(x, y) * y + inner(y, x)
"""

#: (function, example arguments, wrt): exported with backend="numba".
NUMBA_CASES = [
    ("babysqrt", (2.0,), 0),
    ("lotka_volterra", (1.1, 0.4, 0.9, 0.3), (0, 1, 2, 3)),
    ("shrink", (30.0,), 0),
    ("decay", (1.5, 50), 0),
    ("outer", (0.7, 0.3), (0, 1)),
]

#: Imports the exported modules where importing s2sad fails, calls them, and calls
#: babysqrt_grad from a gradient descent that is itself a @numba.njit function.
NUMBA_CHECKER = """\
import importlib.abc
import json
import sys


class NoS2SAD(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "s2sad" or name.startswith("s2sad."):
            raise ImportError(f"{name} is not importable here")
        return None


sys.meta_path.insert(0, NoS2SAD())
try:
    import s2sad  # noqa: F401
    importable = True
except ImportError:
    importable = False
import importlib
import numba

out = {"s2sad importable": importable}
for name, args in json.loads(sys.argv[1]).items():
    module = importlib.import_module(name + "_numba")
    grad = getattr(module, name + "_grad")
    value, again = getattr(module, name + "_value_and_grad")(*args)
    out[name] = {"grad": grad(*args), "value": value, "again": again,
                 "njit": isinstance(grad, numba.core.registry.CPUDispatcher)}
babysqrt_grad = importlib.import_module("babysqrt_numba").babysqrt_grad


@numba.njit
def descend(x, target, steps):
    # sqrt(x) = target by gradient descent on (babysqrt(x) - target) ** 2
    for k in range(steps):
        t = (1 + x) / 2
        for i in range(1000):
            t = (t + x / t) / 2
        x = x - 9.0 * 2.0 * (t - target) * babysqrt_grad(x)
    return x


out["descend"] = descend(2.0, 3.0, 100)
out["s2sad modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "s2sad")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def numba_exported(tmp_path_factory):
    """(directory, {name: (module text, function, args, wrt)}) of the NUMBA_CASES exported
    with backend="numba"."""
    pytest.importorskip("numba", reason="backend='numba' needs Numba, an optional "
                                        "dependency (pip install 's2sad[numba]')")
    directory = tmp_path_factory.mktemp("export_numba")
    (directory / "nmodel.py").write_text(NUMBA_MODEL)
    out = {}
    for name, args, wrt in NUMBA_CASES:
        fn = cli.load(f"{directory / 'nmodel.py'}:{name}")
        text = s2sad.export(fn, directory / f"{name}_numba.py", wrt=wrt, args=args,
                            backend="numba")
        out[name] = (text, fn, args, wrt)
    return directory, out


def test_numba_modules_run_without_s2sad_and_agree(numba_exported):
    directory, exported = numba_exported
    spec = json.dumps({name: list(args) for name, (_, _, args, _) in exported.items()})
    (directory / "checker.py").write_text(NUMBA_CHECKER)
    run = subprocess.run([sys.executable, "checker.py", spec], cwd=directory,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(directory)})
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["s2sad importable"] is False and results["s2sad modules"] == []
    for name, (_, fn, args, wrt) in exported.items():
        got = results[name]
        assert got["njit"]
        wrts = wrt if isinstance(wrt, tuple) else (wrt,)
        grad = tuple(got["grad"]) if isinstance(wrt, tuple) else got["grad"]
        assert got["again"] == got["grad"]
        assert got["value"] == pytest.approx(fn(*args), rel=1e-14)
        native = s2sad.grad(fn, wrt=wrt, backend="numba")(*args)
        python = s2sad.grad(fn, wrt=wrt)(*args)
        central = tuple(_central(fn, args, i) for i in wrts)
        _close(grad, native, rtol=1e-12, atol=1e-14)
        _close(grad, python, rtol=1e-12, atol=1e-14)
        _close(grad if isinstance(wrt, tuple) else (grad,), central, rtol=1e-6, atol=1e-8)
    assert results["babysqrt"]["grad"] == pytest.approx(1 / (2 * math.sqrt(2.0)), rel=1e-14)
    assert results["descend"] == pytest.approx(9.0, rel=1e-10)      # sqrt(9) = 3


def test_numba_modules_are_njit_functions_with_numba_helpers(numba_exported):
    _, exported = numba_exported
    for name, (text, _, _, _) in exported.items():
        assert f"@numba.njit\ndef {name}_grad(" in text
        assert f"@numba.njit\ndef {name}_value_and_grad(" in text
        assert f"def {name}_vjp" not in text and "not here: its pullback is a closure" in text
        imported = {a.name.split(".")[0] for node in ast.walk(ast.parse(text))
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    for a in ([ast.alias(node.module)] if isinstance(node, ast.ImportFrom)
                              else node.names)}
        assert "numba" in imported and "s2sad" not in imported
    outer = exported["outer"][0]
    # (inner returns a number: outer's gradient calls its value_and_grad, which gives
    # the value too, so inner itself is neither called nor copied)
    assert "@numba.njit\ndef inner_value_and_grad(" in outer
    assert "inner_adjoint" not in outer and "def inner(a, b):" not in outer
    assert "--backend numba" in outer


def test_numba_export_copies_the_numba_versions_of_the_helpers_it_uses(tmp_path):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "fit.py").write_text(textwrap.dedent("""\
        import numpy as np


        def loss(w, x, y):
            r = np.tanh(x @ w) - y
            return np.sum(r * r)
        """))
    fn = cli.load(f"{tmp_path / 'fit.py'}:loss")
    rng = np.random.default_rng(3)
    args = (rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=5))
    text = s2sad.export(fn, tmp_path / "loss_numba.py", kind="grad", args=args,
                        backend="numba")
    assert "@overload(_s2s_unbroadcast)\ndef _s2s_numba_unbroadcast(g, x):" in text
    assert "@overload(_s2s_matmul_rhs)\ndef _s2s_numba_matmul_rhs(g, a, b):" in text
    assert "_s2s_numba_unindex" not in text        # only the helpers the code calls
    for disabled in ("0", "1"):     # compiled, and as Python (the helpers' Python copies)
        run = subprocess.run([sys.executable, "-c", "import json, sys, numpy as np\n"
                              "import loss_numba\n"
                              "a = [np.array(v) for v in json.loads(sys.argv[1])]\n"
                              "print(json.dumps(loss_numba.loss_grad(*a).tolist()))",
                              json.dumps([a.tolist() for a in args])], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "NUMBA_DISABLE_JIT": disabled})
        assert run.returncode == 0, run.stderr
        got = np.array(json.loads(run.stdout))
        np.testing.assert_allclose(got, _central(fn, args, 0), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got, s2sad.grad(fn)(*args), rtol=1e-12, atol=1e-14)


def test_numba_export_of_njit_functions_keeps_their_options(tmp_path):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "jitted.py").write_text(textwrap.dedent("""\
        import math

        import numba


        @numba.njit(fastmath=True)
        def step(x, c):
            return x * x * c + math.sin(x)


        @numba.njit(fastmath=True, error_model="numpy")
        def model(x):
            return step(x, 2.0) + step(3.0 * x, 0.5)
        """))
    fn = cli.load(f"{tmp_path / 'jitted.py'}:model")
    text = s2sad.export(fn, tmp_path / "model_numba.py", kind="grad", backend="numba")
    options = "@numba.njit(boundscheck=None, error_model='numpy', fastmath=True)\n"
    assert options + "def model_grad(x):" in text
    # (as the backend made it: step returns a number, so its value_and_grad)
    assert options + "def step_value_and_grad(x, c):" in text
    assert "def step(x, c):" not in text     # (its value_and_grad gives its value)
    run = subprocess.run([sys.executable, "-c", "import model_numba; "
                          "print(model_numba.model_grad(0.7))"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # model' = 4 x + cos x + 9 x + 3 cos 3x
    exact = 13 * 0.7 + math.cos(0.7) + 3 * math.cos(2.1)
    assert float(run.stdout) == pytest.approx(exact, rel=1e-12)


def test_cli_docs_show_the_real_numba_export(tmp_path):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        doc = f.read()
    start = doc.index("```python\n", doc.index("Here `softplus_loss.py` holds:")) + len(
        "```python\n")
    (tmp_path / "softplus_loss.py").write_text(doc[start:doc.index("```", start)])
    command = ("$ s2sad export softplus_loss.py:loss -o loss_numba.py --kind grad "
               "--backend numba\n")
    start = doc.index(command) + len(command)
    shown = doc[start:doc.index("```", start)]
    out = _cli(*command.split()[2:], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert shown == out.stdout + "$ cat loss_numba.py\n" + (tmp_path / "loss_numba.py").read_text()
    run = subprocess.run([sys.executable, "-c", "import loss_numba; "
                          "print(loss_numba.loss_grad(0.5))"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # loss = softplus(3 w) w: loss' = 3 w sigmoid(3 w) + softplus(3 w)
    sigmoid = 1 / (1 + math.exp(-1.5))
    assert float(run.stdout) == pytest.approx(1.5 * sigmoid + math.log1p(math.exp(1.5)),
                                              rel=1e-14)


def test_numba_export_refuses_vjp_and_forward_mode(tmp_path):
    fn = cli.load(f"{_load(tmp_path)}:babysqrt")
    with pytest.raises(s2sad.ExportError, match="kind='vjp' with backend='numba': f_vjp "
                                                "returns its pullback, a closure, which "
                                                "Numba cannot compile"):
        s2sad.export(fn, kind="vjp", backend="numba")
    with pytest.raises(s2sad.ExportError, match="kind='grad,vjp' with backend='numba'"):
        s2sad.export(fn, kind="grad,vjp", backend="numba")
    with pytest.raises(s2sad.ExportError, match="mode='forward' with backend='numba'.*"
                                                "backend='python'"):
        s2sad.export(fn, mode="forward", backend="numba")
    out = _cli("export", "model.py:babysqrt", "--kind", "vjp", "--backend", "numba",
               cwd=tmp_path)
    assert out.returncode == 2 and "Numba cannot compile" in out.stderr
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "listed.py").write_text(textwrap.dedent("""\
        def listed(x):
            xs = [x, 2.0 * x]
            return xs[0] * xs[1]
        """))
    listed = cli.load(f"{tmp_path / 'listed.py'}:listed")   # what the numba backend refuses
    with pytest.raises(s2sad.NativeBackendError, match=r"listed.py:\d+: the numba backend "
                       "cannot compile a list"):
        s2sad.export(listed, backend="numba")


KINDS_USERS_PASS = """\
import numpy as np


def trajectory(k, observed):
    t = np.linspace(0.0, 1.0, observed.shape[0])
    return np.sum((np.exp(-k * t) - observed) ** 2)


def decay(k, observed):
    x = 1.0
    xs = []
    for i in range(4):
        x = x + 0.1 * (-k * x)
        xs.append(x)
    return np.sum((np.array(xs) - observed) ** 2)


def loss(w, X):
    z = np.tanh(X * w)
    return np.mean(z * z) + 0.5 * np.sum(w * w)
"""

#: (function, arguments) the exported gradients are called with, as written in the
#: fresh process: floats, ints, arrays of any number of axes, NumPy's float64.
CALLS = [
    ("trajectory", "1.3, np.array([1.0, 0.5, 0.2])"),
    ("trajectory", "np.array([[1.3], [0.4]]), np.array([1.0, 0.5, 0.2])"),
    ("trajectory", "np.float64(0.8), np.array([1.0, 0.5, 0.2, 0.1])"),
    ("decay", "1.3, np.array([0.9, 0.8, 0.7, 0.6])"),
    ("decay", "1.3, 0.7"),
    ("decay", "2, 0.7"),
    ("decay", "np.array([1.3, 0.4, 2.0]), np.array([[0.9], [0.8], [0.7], [0.6]])"),
    ("loss", "0.7, np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])"),
    ("loss", "np.array([0.7, -0.2, 1.1]), np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])"),
    ("loss", "np.array([[0.7], [-0.2]]), np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])"),
    ("loss", "np.array([0.7, -0.2, 1.1]), 2"),
]


def _central_first(f, x, rest, h=1e-6):
    """Central differences of f(x, *rest) with respect to x, a number or an array."""
    if np.ndim(x) == 0:
        return (f(x + h, *rest) - f(x - h, *rest)) / (2 * h)
    out = np.zeros(np.shape(x))
    for i in np.ndindex(out.shape):
        e = np.zeros(np.shape(x))
        e[i] = h
        out[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * h)
    return out


def _without_s2sad(tmp_path, code):
    """Run `code` in a fresh process in which s2sad cannot be imported; its output."""
    run = subprocess.run([sys.executable, "-c", "import sys\nsys.modules['s2sad'] = None\n"
                          + code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_export_without_at_takes_numbers_and_arrays(tmp_path):
    """#36: exported without --at, the gradient of a NumPy function takes a number or an
    array (of any number of axes) for each parameter, as the function does."""
    (tmp_path / "kinds.py").write_text(KINDS_USERS_PASS)
    for name in ("trajectory", "decay", "loss"):
        out = _cli("export", f"kinds.py:{name}", "-o", f"{name}_derivatives.py", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    text = (tmp_path / "trajectory_derivatives.py").read_text()
    assert "for k (a number or float array), observed (a number or\nreal array):" in text
    assert ("def trajectory_grad(k, observed):\n    if not _s2s_number_or_float_array(k) or "
            "not _s2s_number_or_real_array(observed):\n        return _s2s_respecialize(k, "
            "observed)\n") in text
    code = "import json\nimport numpy as np\n" + "".join(
        f"import {name}_derivatives\n" for name in ("trajectory", "decay", "loss"))
    code += "out = []\n"
    for name, args in CALLS:
        module = f"{name}_derivatives"
        code += (f"g = {module}.{name}_grad({args})\n"
                 f"v, vg = {module}.{name}_value_and_grad({args})\n"
                 f"value, pullback = {module}.{name}_vjp({args})\n"
                 "out.append([np.asarray(g).tolist(), float(v), np.asarray(vg).tolist(), "
                 "float(value), np.asarray(pullback(1.0)).tolist(), np.ndim(g)])\n")
    got = json.loads(_without_s2sad(tmp_path, code + "print(json.dumps(out))\n"))
    user = {name: cli.load(f"{tmp_path / 'kinds.py'}:{name}")
            for name in ("trajectory", "decay", "loss")}
    for (name, args), (g, v, vg, value, pulled, ndim) in zip(CALLS, got):
        x, *rest = eval(f"({args},)", {"np": np})
        expected = _central_first(user[name], x, rest)
        assert ndim == np.ndim(x), (name, args)
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-9, err_msg=args)
        assert vg == g and pulled == g and v == value == pytest.approx(user[name](x, *rest))


def test_export_without_at_refuses_lists_and_objects_with_a_call_that_exports_them(tmp_path):
    (tmp_path / "kinds.py").write_text(KINDS_USERS_PASS)
    out = _cli("export", "kinds.py:decay", "-o", "decay_derivatives.py", "--kind", "grad",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    code = ("import numpy as np\nimport decay_derivatives\n"
            "for args in [(1.3, [0.9, 0.8, 0.7, 0.6]), (np.array([1, 2]), 0.7),\n"
            "             (1.3, object()), (1.5j, 0.7)]:\n"
            "    try:\n"
            "        decay_derivatives.decay_grad(*args)\n"
            "    except TypeError as error:\n"
            "        print(error)\n")
    refused = _without_s2sad(tmp_path, code).splitlines()
    assert len(refused) == 4
    exported_for = ("decay_grad() was exported for k (a number or float array), observed (a "
                    "number or real array); it was called with ")
    call = ("s2sad.export(decay, 'decay_derivatives.py', kind='grad', args=(k, observed)), "
            "with the arguments of that call (in Python)")
    assert refused[0] == (exported_for + "k (float), observed (list). Export it again for "
                          "such arguments: " + call)
    assert refused[1].startswith(exported_for + "k (int64 array of shape (2,)), observed "
                                                "(float)")
    assert "observed (object)" in refused[2] and "k (complex)" in refused[3]
    # the call it gives exports the gradient for a list
    run = subprocess.run([sys.executable, "-c", "import s2sad\nfrom kinds import decay\n"
                          "k, observed = 1.3, [0.9, 0.8, 0.7, 0.6]\n" + call.split(", with")[0]
                          + "\nimport decay_derivatives\n"
                          "print(decay_derivatives.decay_grad(k, observed))\n"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert run.returncode == 0, run.stderr
    decay = cli.load(f"{tmp_path / 'kinds.py'}:decay")
    assert float(run.stdout) == pytest.approx(_central_first(decay, 1.3, [[0.9, 0.8, 0.7, 0.6]]),
                                              rel=1e-6)


def test_forward_export_without_at_takes_numbers_and_arrays(tmp_path):
    (tmp_path / "kinds.py").write_text(KINDS_USERS_PASS)
    out = _cli("export", "kinds.py:loss", "-o", "loss_jvp.py", "--mode", "forward",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    X = "np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])"
    code = ("import json\nimport numpy as np\nimport loss_jvp\n"
            f"a = loss_jvp.loss_jvp(0.7, {X}, 1.0)\n"
            f"b = loss_jvp.loss_jvp(np.array([0.7, -0.2, 1.1]), {X}, np.array([1.0, 2.0, -1.0]))\n"
            "print(json.dumps([float(a[1]), float(b[1])]))\n")
    scalar, array = json.loads(_without_s2sad(tmp_path, code))
    loss = cli.load(f"{tmp_path / 'kinds.py'}:loss")
    X = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    w, v = np.array([0.7, -0.2, 1.1]), np.array([1.0, 2.0, -1.0])
    assert scalar == pytest.approx(_central_first(loss, 0.7, [X]), rel=1e-6)
    h = 1e-6
    assert array == pytest.approx((loss(w + h * v, X) - loss(w - h * v, X)) / (2 * h), rel=1e-6)


def test_numba_export_without_at_is_compiled_for_numbers_and_arrays(tmp_path):
    """With --backend numba, the code exported without --at is that for arrays, without a
    test of the arguments' types: Numba compiles it for the types of each call, floats
    included."""
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "kinds.py").write_text(KINDS_USERS_PASS.replace("np.mean(z * z)",
                                                                "np.sum(z * z)"))
    out = _cli("export", "kinds.py:loss", "-o", "loss_numba.py", "--backend", "numba",
               cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "for w (array), X (array), compiled with Numba" in (
        tmp_path / "loss_numba.py").read_text()
    X = "np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])"
    code = ("import json\nimport numpy as np\nimport loss_numba\n"
            f"a = loss_numba.loss_grad(0.7, {X})\n"
            f"b = loss_numba.loss_grad(np.array([0.7, -0.2, 1.1]), {X})\n"
            f"c = loss_numba.loss_value_and_grad(np.array([[0.7], [-0.2]]), {X})[1]\n"
            "print(json.dumps([float(a), b.tolist(), c.tolist()]))\n")
    a, b, c = json.loads(_without_s2sad(tmp_path, code))
    loss = cli.load(f"{tmp_path / 'kinds.py'}:loss")
    X = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    assert a == pytest.approx(_central_first(loss, 0.7, [X]), rel=1e-6)
    np.testing.assert_allclose(b, _central_first(loss, np.array([0.7, -0.2, 1.1]), [X]), rtol=1e-6)
    np.testing.assert_allclose(c, _central_first(loss, np.array([[0.7], [-0.2]]), [X]), rtol=1e-6)


VIEWED = '''\
import numpy as np


def first_then_written(a):
    y = a * 1.0
    r = y[0]
    y[0] = 5.0
    return np.sum(r * a)
'''


def test_the_check_that_an_index_is_no_view_is_exported(tmp_path):
    """Written for numbers and arrays alike, `r = y[0]` is a copy of a vector's element
    and a view of a matrix's row: the exported module checks it when it runs, with
    s2sad's located error (before, export refused the function)."""
    (tmp_path / "viewed.py").write_text(VIEWED)
    fn = cli.load(f"{tmp_path / 'viewed.py'}:first_then_written")
    text = s2sad.export(fn, tmp_path / "viewed_exported.py")
    assert "import s2sad" not in text and "_s2s_view_error = UnsupportedSyntaxError(" in text
    call = ("import sys, numpy as np, viewed_exported as m\n"
            "print(list(m.first_then_written_grad(np.array([1.0, 2.0]))))\n"
            "try:\n"
            "    m.first_then_written_grad(np.array([[1.0, 2.0]]))\n"
            "except Exception as error:\n"
            "    print(type(error).__name__, str(error).splitlines()[0])\n")
    run = subprocess.run([sys.executable, "-c", call], cwd=tmp_path, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    grad_line, error_line = run.stdout.strip().splitlines()
    a, h = np.array([1.0, 2.0]), 1e-6       # f = a0 (a0 + a1)
    fd = [(fn(a + h * e) - fn(a - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(eval(grad_line, {"np": np}), fd, rtol=1e-8)
    assert error_line.startswith(f"UnsupportedSyntaxError {tmp_path / 'viewed.py'}:6:")
    assert "is a view" in error_line


CALLS_S2SAD = '''\
import numpy as np
import s2sad

vjp = s2sad.vjp


def inner(x):
    return np.sin(x) * x


@s2sad.custom_vjp
def smooth(x):
    return np.sum(x * x)


def smooth_fwd(x):
    return np.sum(x * x), x


def smooth_bwd(x, g):
    y, pullback = vjp(inner, x)
    return (g * 2 * x,)


smooth.defvjp(smooth_fwd, smooth_bwd)


def doubled(x):
    return smooth(x) * 2.0
'''


def test_a_copied_function_that_calls_s2sad_through_a_global_is_refused_at_it(tmp_path):
    """A custom_vjp's bwd reading `vjp = s2sad.vjp`: the module copied s2sad's vjp and all
    it reads (29,000 lines, and `import s2sad`); now refused, naming the function."""
    (tmp_path / "calls.py").write_text(CALLS_S2SAD)
    fn = cli.load(f"{tmp_path / 'calls.py'}:doubled")
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(s2sad.grad(fn)(x), 4 * x, rtol=1e-15)     # (its rule's)
    line = CALLS_S2SAD.splitlines().index("def smooth_bwd(x, g):") + 1
    with pytest.raises(s2sad.ExportError, match=rf"calls.py:{line}: your function "
                       r"smooth_bwd\(\) reads 'vjp', vjp of s2sad, which works by running"):
        s2sad.export(fn, args=(x,))
