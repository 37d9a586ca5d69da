"""``fluid.dygraph.dygraph_to_static``: the translation of declarative functions into static programs.

fluidcompat translates at run time (``translator`` rewrites the source, ``runtime`` decides per
condition whether it is a Variable; NOTE: [Declarative] in dygraph/jit.py). fluid 1.8's own modules
of this package were public enough that its tests and some users imported them; they are here
under fluid 1.8's names, written for fluidcompat, and imported when first asked for (they need the
``gast`` package, which fluid 1.8 installed and ``fluidcompat[legacy]`` installs):

- ``utils``: ast_to_func, ast_to_source_code, is_dygraph_api / is_paddle_api / is_numpy_api,
  IsControlFlowVisitor, index_in_list, RenameTransformer, ...
- ``static_analysis``: NodeVarType, AstNodeWrapper, StaticAnalysisVisitor
- ``ifelse_transformer``: get_name_ids, IfConditionVisitor, NameVisitor
- ``loop_transformer``: NameVisitor (loop variables)
- ``variable_trans_func``: data_layer_not_check, create_fill_constant_node, to_static_variable
- ``convert_call_func``: convert_call
- ``program_translator``: ProgramTranslator, convert_function_with_cache
"""

from __future__ import annotations

import importlib

from fluidcompat.dygraph.dygraph_to_static.translator import convert, converted_source

__all__ = [
    "convert",
    "converted_source",
    "ProgramTranslator",
    "convert_call",
    "convert_function_with_cache",
    "NodeVarType",
    "AstNodeWrapper",
    "StaticAnalysisVisitor",
    "NameVisitor",
    "data_layer_not_check",
    "to_static_variable",
    "to_static_variable_gast_node",
    "create_static_variable_gast_node",
]

_SUBMODULES = (
    "convert_call_func",
    "ifelse_transformer",
    "loop_transformer",
    "program_translator",
    "runtime",
    "static_analysis",
    "translator",
    "utils",
    "variable_trans_func",
)

# name -> the submodule that gives it (fluid 1.8's package exported these from its submodules)
_EXPORTS = {
    "ProgramTranslator": "program_translator",
    "convert_function_with_cache": "program_translator",
    "convert_call": "convert_call_func",
    "NodeVarType": "static_analysis",
    "AstNodeWrapper": "static_analysis",
    "StaticAnalysisVisitor": "static_analysis",
    "NameVisitor": "loop_transformer",
    "data_layer_not_check": "variable_trans_func",
    "to_static_variable": "variable_trans_func",
    "to_static_variable_gast_node": "variable_trans_func",
    "create_static_variable_gast_node": "variable_trans_func",
}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'paddle.fluid.dygraph.dygraph_to_static' (fluidcompat) has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_EXPORTS))
