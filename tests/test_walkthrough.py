"""docs/design.md's walkthrough "Adding an elementwise NumPy function" is true: the block
it shows is np.sinc's whole declaration, in the one file it names, and that block alone
makes np.sinc differentiable (taken out of a copy of the package, np.sinc is refused;
put back at the end of its rule module, its derivatives are right)."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "s2sad")
DESIGN = os.path.join(ROOT, "docs", "design.md")
RULES = os.path.join("rules", "numpy.py")
START = "# np.sinc: its derivative is a helper of its own"
END = 'rule(np.sinc, "x", "g * _s2s_sinc_slope(x, 1)", elementwise=True)\n'


def the_pages_block():
    with open(DESIGN, encoding="utf-8") as f:
        page = f.read()
    section = page[page.index("### Adding an elementwise NumPy function"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def the_modules_block(text):
    start = text.index(START)
    return start, text.index(END, start) + len(END)


def test_the_page_shows_the_block_of_the_rule_module():
    with open(os.path.join(PACKAGE, RULES), encoding="utf-8") as f:
        text = f.read()
    start, end = the_modules_block(text)
    block = text[start:end]
    shown = the_pages_block()
    # (the page elides the helper's body: the lines it shows are the module's, in order)
    body = block[block.index('    """'):block.index("\n\n\nrule(")]
    assert shown.replace('    ...     # (the n-th derivative of np.sinc at x, by series '
                         'near 0)', body.rstrip("\n")) == block


def test_nothing_else_in_the_package_names_the_function_or_its_helper():
    named = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if re.search(r"\bsinc(_slope)?\b", f.read()):
                        named.append(os.path.relpath(path, PACKAGE))
    assert named == [RULES]


CHECK = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import s2sad
    assert s2sad.__file__.startswith(sys.argv[1]), s2sad.__file__
    from f_module import f

    x = np.array([0.01, -0.3, 1.7, 2.0])
    if sys.argv[2] == "refused":
        try:
            s2sad.grad(f)(x)
        except s2sad.MissingRuleError as e:
            assert "np.sinc" in str(e), e
            print("refused")
        sys.exit(0)

    def central(fn, x, h):
        return np.array([(fn(x + h * e) - fn(x - h * e)) / (2 * h) for e in np.eye(len(x))])

    np.testing.assert_allclose(s2sad.grad(f)(x), central(f, x, 1e-6), rtol=1e-7, atol=1e-8)
    v = np.array([0.5, -1.0, 2.0, 0.25])
    _, y_dot = s2sad.jvp(f, (x,), (v,))
    np.testing.assert_allclose(y_dot, central(f, x, 1e-6) @ v, rtol=1e-7, atol=1e-8)
    g = s2sad.grad(f)
    np.testing.assert_allclose(s2sad.hessian(f)(x), central(g, x, 1e-5), rtol=1e-6, atol=1e-7)
    print("right")
''')

F_MODULE = textwrap.dedent('''
    import numpy as np

    def f(x):
        return np.sum(np.sinc(x) ** 2 * x)
''')


def test_the_block_alone_makes_np_sinc_differentiable(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "s2sad",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "f_module.py").write_text(F_MODULE)
    module = copy / "s2sad" / RULES
    text = module.read_text(encoding="utf-8")
    start, end = the_modules_block(text)
    module.write_text(text[:start] + text[end:], encoding="utf-8")

    def run(what):
        out = subprocess.run([sys.executable, "-c", CHECK, str(copy), what],
                             capture_output=True, text=True, cwd=str(copy), timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run("refused") == "refused"
    module.write_text(text[:start] + text[end:] + "\n\n" + text[start:end], encoding="utf-8")
    assert run("right") == "right"
