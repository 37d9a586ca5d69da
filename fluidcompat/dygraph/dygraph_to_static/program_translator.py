"""``fluid.dygraph.dygraph_to_static.program_translator``: where fluid 1.8 kept ProgramTranslator.

The translator itself is ``fluid.dygraph.jit.ProgramTranslator`` (one instance);
``convert_function_with_cache(func)`` is ``func`` translated, once per function.
"""

from __future__ import annotations

from fluidcompat.dygraph.jit import ProgramTranslator

__all__ = ["ProgramTranslator", "convert_function_with_cache"]


def convert_function_with_cache(dygraph_func):
    """``dygraph_func`` with its control flow translated (NOTE: [Declarative]); the same function
    object for the same ``dygraph_func`` each time."""
    from fluidcompat.dygraph.dygraph_to_static.translator import convert

    return convert(dygraph_func)
