"""Running programs: the pure placement planner, the interpreter, scopes and the Executor.

Only ``placement`` is torch-free; the rest is imported on first use so that building programs
never imports torch.
"""

import importlib

_LAZY = {
    "Executor": "fluidcompat.executor.executor",
    "CompiledProgram": "fluidcompat.compiler",
    "BuildStrategy": "fluidcompat.compiler",
    "ExecutionStrategy": "fluidcompat.compiler",
    "Scope": "fluidcompat.executor.scope",
    "LoDTensor": "fluidcompat.executor.scope",
    "Tensor": "fluidcompat.executor.scope",
    "global_scope": "fluidcompat.executor.scope",
    "scope_guard": "fluidcompat.executor.scope",
    "EnforceNotMet": "fluidcompat.executor.interpreter",
    "as_numpy": "fluidcompat.executor.executor",
    "_as_lodtensor": "fluidcompat.executor.executor",
    "FetchHandler": "fluidcompat.fluid_dataset",
}

__all__ = sorted(n for n in _LAZY if not n.startswith("_"))


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        from fluidcompat.fluid18_names import unsupported

        return unsupported("paddle.fluid.executor")(name)
    return getattr(importlib.import_module(module), name)
