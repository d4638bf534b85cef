"""Random NumPy programs with complex values in them, as source text, for fuzzing s2sad's
complex numbers (before_ad/complex_values.py, docs/complex.md).

`complex_programs()` is a hypothesis strategy whose values are `ComplexProgram`s: a
program of numpy_programs.py (its differentiable subset) with a few statements put in
after one of its top-level statements, which rebind a name already bound there (a
parameter or a value of the program) as that name plus a term. The term holds a complex
value in one of these forms:

- "differentiated": a complex value meets a differentiated one (the sum of an array
  parameter) in rules that hold for complex values, made by a literal on the same line
  or on a line before, `complex()`, `cmath`, a complex dtype (`dtype=`, `.astype`, as a
  type or a string), `np.fft` (the identity `ifft(fft(p))`, a power spectrum), a complex
  global, a complex value stored in a list or written into an array, read from a branch
  that does not run, or carried by a loop; the derivatives must be right (the checks of
  test_fuzz_numpy.py against finite differences);
- "refused": a complex value meets a differentiated one in a rule for real values only
  (`np.fft.ihfft`, `np.emath`, `np.sign`); s2sad must
  raise `ComplexValueError` at compile time, naming the line where it does
  (`expected_line`);
- "at run time": a complex value that only the run shows, from a helper of the module
  that s2sad does not differentiate (it returns `np.exp(0.0j)`, numerically 1) or from
  `np.roots` of constant coefficients; s2sad must raise `ComplexValueError` when the
  derivative runs, naming `expected_line` (the statements are at the top level of the
  function, so they always run);
- "allowed": complex values that never meet a differentiated one, or only their modulus,
  phase, real or imaginary part does (`abs(np.exp(0.3j))`, `np.abs(np.fft.fft(c))`, a
  helper returning `abs(np.exp(0.5j))`); the derivatives must be right.

The terms are scaled by 0.01, so the program's values stay in the bounds its generator
kept them in.
"""
import ast
from dataclasses import dataclass

from hypothesis import strategies as st

from .numpy_programs import NumpyProgram, numpy_programs

PRELUDE = '''import cmath
Z = 0.5j


def unit():
    return np.exp(0.0j)


def real_unit():
    return abs(np.exp(0.5j))
'''

#: (expectation, statements): `{n}` is the name rebound, `{p}` an array parameter; the
#: line marked `# meets` is where the complex value meets the differentiated one.
FORMS = {
    "literal": ("differentiated",
                ["{n} = {n} + 0.01 * np.real(np.exp(1j * np.sum({p})))"]),
    "literal before": ("differentiated", ["cz = np.exp(0.5j)",
                                          "{n} = {n} + 0.01 * np.real(cz * np.sum({p}))"]),
    "complex()": ("differentiated",
                  ["{n} = {n} + 0.01 * abs(complex(np.sum({p}), 1.0))"]),
    "cmath": ("differentiated", ["{n} = {n} + 0.01 * cmath.exp(np.sum({p})).real"]),
    "astype": ("differentiated",
               ["{n} = {n} + 0.01 * np.sum(np.abs({p}.astype(complex) + 1j))"]),
    "astype string": ("differentiated",
                      ["{n} = {n} + 0.01 * np.sum(np.abs({p}.astype('complex128') - 2j))"]),
    "dtype": ("differentiated",
              ["{n} = {n} + 0.01 * np.sum(np.real(np.asarray({p}, dtype=np.complex128)))"]),
    "global": ("differentiated", ["{n} = {n} + 0.01 * np.real(Z * np.sum({p}))"]),
    "list": ("differentiated", ["cl = [1.0, 1j]",
                                "{n} = {n} + 0.01 * np.imag(cl[1] * np.sum({p}))"]),
    "branch": ("differentiated", ["cb = 1.0",
                                  "if np.sum({p}) > 100.0:",
                                  "    cb = 1j",
                                  "{n} = {n} + 0.01 * np.real(cb * np.sum({p}))"]),
    "loop": ("differentiated", ["cr = 1.0",
                                "for ci in range(2):",
                                "    cr = cr * (1j + np.sum({p}))",
                                "{n} = {n} + 0.01 * np.angle(cr + 2.0)"]),
    "write": ("differentiated", ["cw = np.zeros(2, dtype=complex)",
                                 "cw[1] = np.sum({p}) * (0.5 - 1j)",
                                 "{n} = {n} + 0.01 * np.sum(np.abs(cw + 1.0))"]),
    "fft identity": ("differentiated",
                     ["{n} = {n} + 0.01 * np.sum(np.real(np.fft.ifft(np.fft.fft("
                      "np.ravel({p})))))"]),
    "power spectrum": ("differentiated",
                       ["{n} = {n} + 0.01 * np.sum(np.abs(np.fft.rfft(np.ravel({p}), 4)) ** 2)"]),
    "hermitian fft": ("refused",
                      ["{n} = {n} + 0.01 * np.sum(np.real(np.fft.ihfft(np.ravel({p}))))"
                       "  # meets"]),
    "emath": ("refused", ["{n} = {n} + 0.01 * np.sum(np.real(np.emath.sqrt({p})))  # meets"]),
    "sign": ("refused", ["cs = np.exp(1j * np.sum({p}))",
                         "{n} = {n} + 0.01 * np.real(np.sign(cs))  # meets"]),
    "helper": ("at run time", ["{n} = {n} + 0.01 * np.real(unit() * np.sum({p}))  # meets"]),
    "roots": ("at run time", ["cq = np.roots(np.array([1.0, 0.0, 1.0]))",
                              "{n} = {n} + 0.01 * np.real(cq[0] * np.sum({p}))  # meets"]),
    "modulus": ("allowed", ["{n} = {n} + 0.01 * np.sum({p}) * abs(np.exp(0.3j))"]),
    "parts": ("allowed", ["cz = np.exp(0.25j)",
                          "{n} = {n} + 0.01 * np.sum({p}) * (cz.real + np.angle(cz) - cz.imag)"]),
    "spectrum": ("allowed", ["{n} = {n} + 0.01 * np.sum({p}) * "
                             "np.abs(np.fft.fft(np.array([1.0, 2.0])))[1]"]),
    "real helper": ("allowed", ["{n} = {n} + 0.01 * np.sum({p}) * real_unit()"]),
}


@dataclass(frozen=True)
class ComplexProgram:
    """`program` (a NumpyProgram) with complex values put in by the form `form`, whose
    `expectation` is "differentiated", "refused", "at run time" or "allowed";
    `expected_line` is the line of the module where the complex value meets a rule for
    real values only (None if it does not)."""
    program: NumpyProgram
    form: str
    expectation: str
    expected_line: int | None

    def __repr__(self):
        return (f"ComplexProgram(form={self.form!r}, expectation={self.expectation!r}, "
                f"expected_line={self.expected_line!r}, program={self.program!r})")


@st.composite
def complex_programs(draw, expectations=("differentiated", "refused", "at run time", "allowed"),
                     max_statements=4):
    """Hypothesis strategy of `ComplexProgram`s (see the module docstring) whose forms
    have one of `expectations`."""
    program = draw(numpy_programs(max_statements=max_statements))
    tree = ast.parse(program.source)
    f = tree.body[-1]
    arrays = [p for p, shape in zip(program.params, program.shapes) if shape is not None]
    at = draw(st.integers(0, len(f.body) - 1))      # before the statement at `at`
    names = list(program.params) + [
        s.targets[0].id for s in f.body[:at] if isinstance(s, ast.Assign)
        and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        and not isinstance(s.value, ast.List)]
    n = draw(st.sampled_from(names))
    p = draw(st.sampled_from(arrays))
    form = draw(st.sampled_from(sorted(k for k, (e, _) in FORMS.items() if e in expectations)))
    expectation, lines = FORMS[form]
    text = "\n".join(line.format(n=n, p=p) for line in lines)
    marked = [line.split("  # meets")[0].format(n=n, p=p).strip()
              for line in lines if line.endswith("# meets")]
    f.body[at:at] = ast.parse(text).body
    module = ast.unparse(tree)
    head, _, rest = module.partition("\n")       # `import numpy as np`, then the prelude
    source = f"{head}\n{PRELUDE}\n\n{rest}\n"
    expected = None
    if marked:
        meets = ast.unparse(ast.parse(marked[0]))
        expected = next(k for k, line in enumerate(source.splitlines(), 1)
                        if line.strip() == meets)
    changed = NumpyProgram(source, program.name, program.params, program.shapes,
                           program.mutation)
    return ComplexProgram(changed, form, expectation, expected)
