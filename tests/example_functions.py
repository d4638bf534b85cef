"""The functions the scripts of examples/ define, each imported once as a module of its
own (those of a script that imports Numba only when Numba is installed): what the tests
of generated code run over, beside the golden files and the corpora."""
import glob
import importlib.util
import inspect
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load():
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if importlib.util.find_spec("numba") is None and "numba" in open(path).read():
            continue
        spec = importlib.util.spec_from_file_location(f"example_functions_{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        out += [(f"{name}.{k}", v) for k, v in vars(module).items()
                if inspect.isfunction(v) and v.__module__ == spec.name]
    return out


#: [("script.function", function)], in the order of the scripts and their definitions.
EXAMPLES = _load()
