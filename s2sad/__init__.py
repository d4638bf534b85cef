"""s2sad: source-to-source automatic differentiation for Python and NumPy.

>>> import s2sad
>>> @s2sad.grad
... def dbabysqrt(x):
...     t = (1 + x) / 2
...     for i in range(10):
...         t = (t + x / t) / 2
...     return t
>>> dbabysqrt(2.0)
0.35355339059327373
"""
from . import rules  # noqa: F401  (registers the built-in rules)
from .api import (check_grad, checkpoint, checkpointed, custom_jvp, custom_vjp, defvjp, grad,
                  nondiff, register_pytree, source, stop_gradient, value_and_grad, vjp)
from .forward_api import defjvp, jvp
from .hessian_api import hessian, hessp, hvp
from .jacobian_api import jacfwd, jacrev
from .batching_api import vmap
from .api import elementwise_grad
from .frontend import callables
from .implicit import custom_root, fixed_point
from .trace import trace
from .export import export
from .errors import (BatchingLoopWarning, ComplexValueError, CustomRuleError, ExceptionPathError, ExportError,
                     GradientCheckError, InternalError, MissingRuleError, NativeBackendError,
                     NonScalarOutputError, S2SADError, SourceUnavailableError,
                     UnconnectedInputWarning, UnsupportedSyntaxError)



def _declare_scipy():
    from . import scipy_calls       # (imports SciPy's modules)
    scipy_calls.declare()


# (SciPy's solvers, once the user imports their modules)
callables.optional(("scipy.optimize", "scipy.integrate"), _declare_scipy)

__version__ = "0.1.0"
__all__ = ["grad", "value_and_grad", "vjp", "source", "check_grad", "defvjp", "nondiff",
           "custom_vjp", "custom_jvp", "custom_root", "fixed_point", "register_pytree", "checkpoint", "checkpointed",
           "stop_gradient", "trace",
           "elementwise_grad",
           "export", "jvp", "jacfwd", "jacrev",
           "hvp", "hessp", "hessian", "defjvp", "vmap",
           "S2SADError", "UnsupportedSyntaxError", "MissingRuleError",
           "NonScalarOutputError", "SourceUnavailableError", "GradientCheckError",
           "InternalError", "ExceptionPathError", "ExportError", "NativeBackendError",
           "CustomRuleError", "ComplexValueError", "UnconnectedInputWarning",
           "BatchingLoopWarning"]
