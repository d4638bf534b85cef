"""The lists of supported NumPy functions, methods and attributes in docs/numpy.md match
the rule registry.

docs/numpy.md ends with a section "Supported functions, methods and attributes" with
four subsections, each a markdown list with one entry per line:

    ### Functions with derivatives         - `np.name`, `np.linalg.name` or `np.fft.name`,
                                           then any text
    ### Functions with zero derivative     (same; `####` headings may split a list into
                                           groups, each sorted by name)
    ### Array methods                      - `x.name()`: `np.function`, then any text
    ### Array attributes                   - `x.name`: `np.function`, then any text

A method or attribute whose function has zero derivative says "zero derivative" on its
line. Entries are compared as objects, so aliases (`np.abs`, `np.absolute`) both count.
Run `python tests/test_numpy_docs.py` to print the lists as the registry has them.

The section "SciPy" lists under "### SciPy functions with derivatives" the SciPy
functions and distribution methods with rules, one a line, written like the others
(`scipy.special.expit` or `scipy.stats.norm.logpdf` in backquotes, then any text); it is
checked when SciPy imports.
"""
import os
import re

import numpy as np
import pytest

from s2sad.rules import registry

from numpy_cases import identity as _identity

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "numpy.md")
SECTION = "## Supported functions, methods and attributes"
DIFF, NONDIFF = "Functions with derivatives", "Functions with zero derivative"
METHODS, ATTRIBUTES = "Array methods", "Array attributes"
NAMESPACES = (("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft))


# -- the registry --------------------------------------------------------------------
def spellings(obj):
    """Every `np.name` / `np.linalg.name` / `np.fft.name` that denotes `obj`, sorted (`np.add.outer` for
    a ufunc's method)."""
    if isinstance(getattr(obj, "__self__", None), np.ufunc):
        return [f"{s}.{obj.__name__}" for s in spellings(obj.__self__)]
    out = []
    for prefix, module in NAMESPACES:
        for name in dir(module):
            if not name.startswith("_") and getattr(module, name, None) is obj:
                out.append(f"{prefix}.{name}")
    return sorted(out)


#: Spellings preferred over the function's own name when they denote it.
PREFERRED = ("np.abs",)


def name_of(obj):
    """The spelling used for `obj` in messages: a PREFERRED one, else `np.<__name__>`."""
    names = spellings(obj)
    for name in PREFERRED:
        if name in names:
            return name
    for prefix, module in NAMESPACES:
        preferred = f"{prefix}.{getattr(obj, '__name__', '')}"
        if preferred in names:
            return preferred
    return names[0] if names else repr(obj)


def registered_functions():
    """(differentiable, zero-derivative): the NumPy functions with rules, as objects.

    A primitive counts as a NumPy function when some `np.name` or `np.linalg.name`
    denotes it; the others are Python's operators, `math` and builtins, or stand for an
    array method only (`np.ndarray.astype`, the reshape and transpose methods)."""
    diff, nondiff = [], []
    for prim, rule in registry.RULES.items():
        if not spellings(prim):
            continue
        if rule.nondiff:
            nondiff.append(prim)
        elif rule.each is not None or any(v.templates for v in rule.variants):
            diff.append(prim)
    return diff, nondiff


def has_zero_derivative(prim):
    rule = registry.lookup(prim)
    return rule is not None and rule.nondiff


# -- the page --------------------------------------------------------------------------
def page_sections(groups=False):
    """{subsection title: [list lines]} under SECTION of docs/numpy.md; with `groups`,
    {title: [[lines] for each group]}, where `####` headings start groups."""
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    assert SECTION in text, f"docs/numpy.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1]
    body = re.split(r"^## ", body, flags=re.MULTILINE)[0]
    sections, current = {}, None
    for line in body.splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            sections[current] = [[]]
        elif line.startswith("#### ") and current is not None:
            sections[current].append([])
        elif line.startswith("- ") and current is not None:
            sections[current][-1].append(line)
    for title in (DIFF, NONDIFF, METHODS, ATTRIBUTES):
        assert title in sections, f"docs/numpy.md has no subsection '### {title}'"
    if groups:
        return sections
    return {title: [line for group in lines for line in group]
            for title, lines in sections.items()}


def resolve(dotted):
    """The object `np.linalg.norm` names, or None."""
    parts = dotted.split(".")
    if parts[0] != "np":
        return None
    obj = np
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


FUNCTION_LINE = re.compile(r"^- `(np(?:\.\w+)+)`(.*)$")
MEMBER_LINE = re.compile(r"^- `x\.(\w+)(\(\))?`: `(np(?:\.\w+)+)`(.*)$")


def page_functions(lines, title):
    """{spelling: object} for the lines of a function list; malformed lines fail."""
    out = {}
    for line in lines:
        m = FUNCTION_LINE.match(line)
        assert m, f"docs/numpy.md, '### {title}': cannot parse {line!r}"
        obj = resolve(m.group(1))
        if obj is None and "removed by" in line:     # (a rule only where NumPy has it)
            continue
        assert obj is not None, f"docs/numpy.md, '### {title}': {m.group(1)} is not in NumPy"
        assert m.group(1) not in out, f"docs/numpy.md, '### {title}': {m.group(1)} twice"
        out[m.group(1)] = obj
    return out


def page_members(lines, title, call):
    """{name: (target spelling, rest of the line)} for a method or attribute list."""
    out = {}
    for line in lines:
        m = MEMBER_LINE.match(line)
        assert m and bool(m.group(2)) == call, (
            f"docs/numpy.md, '### {title}': cannot parse {line!r}; write "
            + ("- `x.name()`: `np.function`" if call else "- `x.name`: `np.function`"))
        assert m.group(1) not in out, f"docs/numpy.md, '### {title}': x.{m.group(1)} twice"
        out[m.group(1)] = (m.group(3), m.group(4))
    return out


def _difference(page, registered):
    """(spellings on the page of objects not in `registered`, names of objects in
    `registered` that the page does not list)."""
    listed = {_identity(o): o for o in page.values()}
    wanted = {_identity(o): o for o in registered}
    extra = sorted(s for s, o in page.items() if _identity(o) not in wanted)
    missing = sorted(name_of(o) for i, o in wanted.items() if i not in listed)
    return extra, missing


@pytest.mark.parametrize("title, index", [(DIFF, 0), (NONDIFF, 1)])
def test_function_lists_match_the_registry(title, index):
    page = page_functions(page_sections()[title], title)
    extra, missing = _difference(page, registered_functions()[index])
    assert not extra and not missing, (
        f"docs/numpy.md, '### {title}' disagrees with s2sad.rules.registry.RULES:\n"
        f"  listed but not registered: {extra}\n  registered but not listed: {missing}")


@pytest.mark.parametrize("title, table, call", [(METHODS, registry.METHODS, True),
                                                (ATTRIBUTES, registry.ATTRIBUTES, False)])
def test_member_lists_match_the_registry(title, table, call):
    page = page_members(page_sections()[title], title, call)
    assert sorted(page) == sorted(table), (
        f"docs/numpy.md, '### {title}' disagrees with the registry:\n"
        f"  listed but not registered: {sorted(set(page) - set(table))}\n"
        f"  registered but not listed: {sorted(set(table) - set(page))}")
    for name, (target, rest) in page.items():
        prim = table[name]
        # an internal stand-in (the one for x.reshape(2, 3)) is written as np.<name>
        assert resolve(target) is prim or (
            not spellings(prim) and target == _member_target(name, prim)), (
            f"docs/numpy.md says x.{name} means {target}; the registry maps it to "
            f"{_member_target(name, prim)}")
        says_zero = "zero derivative" in rest
        assert says_zero == has_zero_derivative(prim), (
            f"docs/numpy.md, x.{name}: the line should "
            + ("" if has_zero_derivative(prim) else "not ") + "say 'zero derivative'")


def _member_target(name, prim):
    """How the page names the function a method or attribute means."""
    if spellings(prim):
        return name_of(prim)
    if getattr(prim, "__objclass__", None) is np.ndarray:
        return f"np.ndarray.{prim.__name__}"
    return f"np.{name}"


def _key(line):
    m = re.match(r"^- `([^`]*)`", line)
    return (m.group(1) if m else line).lower()


def test_lists_are_sorted():
    sections = page_sections(groups=True)
    for title in (DIFF, NONDIFF, METHODS, ATTRIBUTES):
        for group in sections[title]:
            assert group == sorted(group, key=_key), (
                f"docs/numpy.md, '### {title}': a list is not sorted by name")


def render():
    """The four lists as the registry has them, in the page's format."""
    diff, nondiff = registered_functions()
    out = []
    for title, prims in ((DIFF, diff), (NONDIFF, nondiff)):
        out.append(f"### {title}\n")
        out += sorted((f"- `{name_of(p)}`" for p in prims), key=_key)
        out.append("")
    for title, table, call in ((METHODS, registry.METHODS, True),
                               (ATTRIBUTES, registry.ATTRIBUTES, False)):
        out.append(f"### {title}\n")
        lines = []
        for name, prim in table.items():
            target = _member_target(name, prim)
            zero = ", zero derivative" if has_zero_derivative(prim) else ""
            lines.append(f"- `x.{name}{'()' if call else ''}`: `{target}`{zero}")
        out += sorted(lines, key=_key)
        out.append("")
    return "\n".join(out)


# -- SciPy -----------------------------------------------------------------------------
SCIPY_SECTION, SCIPY_LIST = "## SciPy", "### SciPy functions with derivatives"
SCIPY_LINE = re.compile(r"^- `(scipy(?:\.\w+)+)`(.*)$")
#: Where SciPy's rules live: modules of functions, and distributions (by their methods).
SCIPY_MODULES = ("scipy.special", "scipy.linalg", "scipy.spatial.distance", "scipy.integrate")
SCIPY_DISTRIBUTIONS = tuple(f"scipy.stats.{d}" for d in (
    "norm", "multivariate_normal", "t", "gamma", "beta", "expon", "poisson", "binom",
    "dirichlet", "multivariate_t"))
DISTRIBUTION_METHODS = ("pdf", "logpdf", "pmf", "logpmf", "cdf", "logcdf", "sf", "logsf", "ppf",
                        "isf", "entropy", "rvs")


def _dotted(name):
    """The object `scipy.stats.norm.logpdf` names (importing the module it is in)."""
    import importlib
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for part in parts[k:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(name)


def scipy_registered():
    """{spelling: object} of the SciPy functions and methods with derivative rules (not
    NumPy's own functions that SciPy also exports, such as `scipy.special.sinc`)."""
    out = {}
    for module in SCIPY_MODULES:
        mod = _dotted(module)
        for name in dir(mod):
            obj = getattr(mod, name)
            if (not name.startswith("_") and not isinstance(obj, type) and not spellings(obj)
                    and _has_derivative(obj)):     # (a class: its constructor's, made on use)
                out.setdefault(f"{module}.{name}", obj)
    for dist in SCIPY_DISTRIBUTIONS:
        for name in DISTRIBUTION_METHODS:
            obj = getattr(_dotted(dist), name, None)
            if obj is not None and _has_derivative(obj):
                out[f"{dist}.{name}"] = obj
    return out


def _has_derivative(obj):
    try:
        rule = registry.lookup(obj)
    except TypeError:
        return False
    return rule is not None and not rule.nondiff


def test_scipy_list_matches_the_registry():
    pytest.importorskip("scipy", reason="SciPy is optional")
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    assert SCIPY_SECTION + "\n" in text, f"docs/numpy.md has no section {SCIPY_SECTION!r}"
    body = re.split(r"^## ", text.split(SCIPY_SECTION + "\n", 1)[1], flags=re.MULTILINE)[0]
    assert SCIPY_LIST in body, f"docs/numpy.md, {SCIPY_SECTION}: no {SCIPY_LIST!r}"
    lines = [line for line in body.split(SCIPY_LIST, 1)[1].splitlines()
             if line.startswith("- ")]
    page = {}
    for line in lines:
        m = SCIPY_LINE.match(line)
        assert m, f"docs/numpy.md, {SCIPY_LIST!r}: cannot parse {line!r}"
        page[m.group(1)] = _dotted(m.group(1))
    assert lines == sorted(lines, key=_key), f"docs/numpy.md, {SCIPY_LIST!r}: not sorted"
    registered = scipy_registered()
    # by equality: a bound method read twice is two equal objects
    extra = sorted(s for s, o in page.items() if o not in registered.values())
    missing = sorted(s for s, o in registered.items() if o not in page.values())
    assert not extra and not missing, (
        f"docs/numpy.md, {SCIPY_LIST!r} disagrees with the registry:\n"
        f"  listed but not registered: {extra}\n  registered but not listed: {missing}")


if __name__ == "__main__":
    print(render())
