"""docs/api.md, the API reference, is made from the docstrings of the names s2sad
exports (`s2sad.__all__`): each is documented, and the page is what they say now.
`S2SAD_UPDATE_DOCS=1 python -m pytest tests/test_api_reference.py` writes it again.
(Its examples run as doctests with the other docs.)"""
import inspect
import os

import s2sad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "api.md")

#: The sections of the page, and the names in each, in order.
SECTIONS = [
    ("Derivatives", ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hvp", "hessp",
                     "hessian", "elementwise_grad"]),
    ("Batching", ["vmap"]),
    ("Rules of your own", ["custom_vjp", "custom_jvp", "defvjp", "defjvp", "nondiff",
                           "stop_gradient", "register_pytree"]),
    ("Solvers", ["custom_root", "fixed_point"]),
    ("Memory", ["checkpoint", "checkpointed"]),
    ("Reading and checking derivatives", ["source", "check_grad", "trace", "export"]),
    ("Errors and warnings", ["S2SADError", "UnsupportedSyntaxError", "MissingRuleError",
                             "NonScalarOutputError", "SourceUnavailableError",
                             "GradientCheckError", "InternalError", "ExceptionPathError",
                             "ExportError", "NativeBackendError", "CustomRuleError",
                             "ComplexValueError", "UnconnectedInputWarning",
                             "BatchingLoopWarning"]),
]

HEADER = """# API reference

What `import s2sad` gives you, from the docstrings of the names it exports
(`s2sad.__all__`). The guides say more: [getting started](getting_started.md),
[forward mode](forward_mode.md), [rules](rules.md), [loops and memory](loops.md),
[errors](errors.md). This page is made from the code (`tests/test_api_reference.py`
checks that it is current), and its examples run as tests.
"""


def signature(name, obj):
    target = obj.__init__ if inspect.isclass(obj) and not issubclass(obj, BaseException) \
        else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return f"s2sad.{name}"
    params = [p.replace(annotation=Hint(p.annotation))
              if isinstance(p.annotation, str) else p
              for p in sig.parameters.values() if p.name != "self"]
    return f"s2sad.{name}({', '.join(str(p) for p in params)})"


class Hint:
    """An annotation written as a string (the package's modules postpone their
    annotations), shown as written rather than quoted."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def render():
    out = [HEADER]
    for title, names in SECTIONS:
        out.append(f"## {title}\n")
        for name in names:
            obj = getattr(s2sad, name)
            head = (f"class s2sad.{name}" if inspect.isclass(obj) and issubclass(
                obj, BaseException) else signature(name, obj))
            out.append(f"### `{head}`\n")
            out.append(inspect.getdoc(obj).strip() + "\n")
    return "\n".join(out)


def test_every_exported_name_is_on_the_page_once():
    listed = [n for _, names in SECTIONS for n in names]
    assert sorted(listed) == sorted(s2sad.__all__)
    assert len(set(listed)) == len(listed)


def test_every_exported_name_has_a_docstring_that_says_what_it_is():
    for name in s2sad.__all__:
        doc = inspect.getdoc(getattr(s2sad, name))
        assert doc and doc.split("\n")[0].strip(), name
        # (a class's docstring, not one it inherits: each says what it is for)
        obj = getattr(s2sad, name)
        if inspect.isclass(obj):
            assert "__doc__" in vars(obj) and vars(obj)["__doc__"], name


def test_every_exported_function_and_constructor_has_type_hints():
    """Each parameter of each exported function (and class constructor, for the classes
    that are not errors) is annotated, and so is what it returns."""
    bare = []
    for name in s2sad.__all__:
        obj = getattr(s2sad, name)
        if inspect.isclass(obj):
            if issubclass(obj, BaseException):
                continue
            obj = obj.__init__
        sig = inspect.signature(obj)
        bare += [f"{name}: {p.name}" for p in sig.parameters.values()
                 if p.name != "self" and p.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty:
            bare.append(f"{name}: its result")
    assert not bare, "without a type hint: " + ", ".join(bare)


def test_the_page_is_what_the_docstrings_say():
    text = render()
    if os.environ.get("S2SAD_UPDATE_DOCS"):
        with open(PAGE, "w", encoding="utf-8") as f:
            f.write(text)
    with open(PAGE, encoding="utf-8") as f:
        assert f.read() == text, ("docs/api.md is not what the docstrings say: write it "
                                  "again with S2SAD_UPDATE_DOCS=1 python -m pytest "
                                  "tests/test_api_reference.py")


def test_the_index_links_the_page():
    with open(os.path.join(ROOT, "docs", "index.md"), encoding="utf-8") as f:
        assert "(api.md)" in f.read()
