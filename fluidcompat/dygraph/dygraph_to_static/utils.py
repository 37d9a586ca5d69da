"""``fluid.dygraph.dygraph_to_static.utils``: fluid 1.8's helpers over gast trees, for fluidcompat.

Which call is a paddle / dygraph / numpy API (``is_paddle_api``, ``is_dygraph_api``,
``is_numpy_api``: the call's function, evaluated where ``fluid``, ``layers``, ``dygraph``,
``to_variable``, ``np`` are known, belongs to that module; fluid 1.8's ``paddle.fluid`` is
fluidcompat here), whether a condition depends on a tensor (``IsControlFlowVisitor``), source and
functions from trees (``ast_to_source_code``, ``ast_to_func``) and small node builders.
"""

from __future__ import annotations

import ast
import atexit
import copy
import importlib.util
import inspect
import os
import tempfile

import gast

__all__ = [
    "IsControlFlowVisitor",
    "RenameTransformer",
    "ast_to_func",
    "ast_to_source_code",
    "compare_with_none",
    "create_api_shape_node",
    "create_assign_node",
    "create_funcDef_node",
    "dygraph_class_to_static_api",
    "generate_name_node",
    "get_attribute_full_name",
    "get_constant_variable_node",
    "index_in_list",
    "is_api_in_module",
    "is_candidate_node",
    "is_control_flow_to_transform",
    "is_dygraph_api",
    "is_numpy_api",
    "is_paddle_api",
    "is_to_variable",
    "recover_globals_attribute",
    "to_static_api",
]

# fluid 1.8's dygraph learning-rate classes and the static functions that compute the same
dygraph_class_to_static_api = {
    "CosineDecay": "cosine_decay",
    "ExponentialDecay": "exponential_decay",
    "InverseTimeDecay": "inverse_time_decay",
    "NaturalExpDecay": "natural_exp_decay",
    "NoamDecay": "noam_decay",
    "PiecewiseDecay": "piecewise_decay",
    "PolynomialDecay": "polynomial_decay",
}


def index_in_list(array_list, item) -> int:
    """The index of ``item`` in ``array_list``, -1 when it is not there."""
    for i, candidate in enumerate(array_list):
        if candidate == item:
            return i
    return -1


# -- which module a call belongs to ----------------------------------------------------------------------
def _fluidcompat_prefix(module_prefix: str) -> str:
    """fluid 1.8's module prefix as fluidcompat names it (``paddle.fluid.dygraph`` -> ``fluidcompat.dygraph``)."""
    if module_prefix == "paddle.fluid" or module_prefix.startswith("paddle.fluid."):
        return "fluidcompat" + module_prefix[len("paddle.fluid") :]
    return module_prefix


def _eval_namespace() -> dict:
    import numpy as np

    import fluidcompat as fluid
    from fluidcompat import dygraph, layers
    from fluidcompat.compat import paddle
    from fluidcompat.dygraph import to_variable

    return {"paddle": paddle, "fluid": fluid, "layers": layers, "dygraph": dygraph, "to_variable": to_variable,
            "np": np, "numpy": np}  # fmt: skip


def _resolve(node):
    """What the call's function names, or None when it names nothing known."""
    source = ast_to_source_code(node.func).strip()
    try:
        return True, eval(source, _eval_namespace())  # noqa: S307  (a dotted name from the user's source)
    except Exception:
        return False, None


def _in_module(obj, module_prefix: str) -> bool:
    module = inspect.getmodule(obj)
    if module is None:
        return False
    name = module.__name__
    return name.startswith(module_prefix) or name.startswith(_fluidcompat_prefix(module_prefix))


def is_api_in_module(node, module_prefix: str) -> bool:
    """Whether the call ``node`` calls a function of the module ``module_prefix`` (fluid's names)."""
    assert isinstance(node, gast.Call), "Input non-Call node for is_dygraph_api"
    found, obj = _resolve(node)
    return found and _in_module(obj, module_prefix)


def is_dygraph_api(node) -> bool:
    # what the translator itself gives is not a dygraph API
    if is_api_in_module(node, "paddle.fluid.dygraph.dygraph_to_static"):
        return False
    return is_api_in_module(node, "paddle.fluid.dygraph")


def is_paddle_api(node) -> bool:
    return is_api_in_module(node, "paddle.fluid")


def is_numpy_api(node) -> bool:
    """Whether the call is numpy's: its function is in numpy, or it is written ``np.`` / ``numpy.``
    (``np.random.uniform`` has no module)."""
    assert isinstance(node, gast.Call), "Input non-Call node for is_numpy_api"
    found, obj = _resolve(node)
    if not found:
        return False
    if _in_module(obj, "numpy"):
        return True
    source = ast_to_source_code(node.func).strip()
    return source.startswith(("numpy.", "np."))


def is_to_variable(node) -> bool:
    return (
        isinstance(node, gast.Call)
        and is_dygraph_api(node)
        and ast_to_source_code(node.func).strip().endswith("to_variable")
    )


def to_static_api(dygraph_class: str) -> str:
    if dygraph_class in dygraph_class_to_static_api:
        return dygraph_class_to_static_api[dygraph_class]
    raise NotImplementedError(f"Paddle dygraph API {dygraph_class} cannot be converted to static graph at present.")


def is_control_flow_to_transform(node, static_analysis_visitor=None, var_name_to_type=None) -> bool:
    """Whether ``node`` (an if / for / while or a condition) depends on a tensor."""
    assert isinstance(node, gast.AST), f"The type of input node must be gast.AST, but received {type(node)}."
    return IsControlFlowVisitor(node, static_analysis_visitor, node_var_type_map=var_name_to_type).transform()


# -- trees to source and functions ---------------------------------------------------------------------
def ast_to_source_code(ast_node) -> str:
    """The source of a gast or ast tree (astor's layout, as fluid 1.8's, where astor is installed)."""
    if not isinstance(ast_node, (gast.AST, ast.AST)):
        raise TypeError(f"Type of ast_root should be gast.AST or ast.AST, but received {type(ast_node)}.")
    if isinstance(ast_node, gast.AST):
        ast_node = gast.gast_to_ast(ast_node)
    try:
        import astor
    except ImportError:
        return ast.unparse(ast.fix_missing_locations(ast_node)) + "\n"
    return astor.to_source(ast_node)


def ast_to_func(ast_root, dyfunc, delete_on_exit: bool = True):
    """``(function, file name)``: the tree's source written to a temporary module file and loaded; the
    function named as ``dyfunc`` from it, seeing ``dyfunc``'s globals."""
    source = ast_to_source_code(ast_root)
    with tempfile.NamedTemporaryFile(mode="w", suffix=".py", delete=False, encoding="utf-8") as f:
        f.write(source)
    if delete_on_exit:
        atexit.register(_remove_quietly, f.name)
    module_name = os.path.basename(f.name)[:-3]
    spec = importlib.util.spec_from_file_location(module_name, f.name)
    module = importlib.util.module_from_spec(spec)
    recover_globals_attribute(dyfunc, module)  # names the source uses while it is executed
    spec.loader.exec_module(module)
    func_name = dyfunc.__name__
    if not hasattr(module, func_name):
        raise ValueError(f"Function: {func_name} doesn't exist in the Module transformed from AST.")
    callable_func = getattr(module, func_name)
    recover_globals_attribute(dyfunc, callable_func)
    return callable_func, f.name


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def recover_globals_attribute(src_obj, dst_obj) -> None:
    """Copy ``src_obj``'s globals (not the dunder ones) into ``dst_obj``'s (a function or a module)."""
    src = getattr(src_obj, "__globals__", {})
    dst = getattr(dst_obj, "__globals__", None)
    if dst is None:
        dst = vars(dst_obj)
    for k, v in src.items():
        if not (k.startswith("__") and k.endswith("__")):
            dst[k] = v


# -- node builders -------------------------------------------------------------------------------------
def _name(name_id: str, ctx=None):
    return gast.Name(id=name_id, ctx=ctx if ctx is not None else gast.Load(), annotation=None, type_comment=None)


def generate_name_node(name_ids, ctx=None):
    """One gast.Name, or a gast.Tuple of them for several names."""
    ctx = ctx if ctx is not None else gast.Load()
    if isinstance(name_ids, str):
        name_ids = [name_ids]
    if not isinstance(name_ids, (list, tuple, set)):
        raise TypeError(f"name_ids must be list or tuple or set, but received {type(name_ids)}")
    names = [_name(n, ctx) for n in name_ids]
    return names[0] if len(names) == 1 else gast.Tuple(elts=names, ctx=ctx)


def create_funcDef_node(nodes, name, input_args, return_name_ids):  # noqa: N802  (fluid's name)
    """A gast.FunctionDef of the statements that returns the named variables."""
    body = list(nodes)
    body.append(gast.Return(value=generate_name_node(return_name_ids) if return_name_ids else None))
    node = gast.FunctionDef(name=name, args=input_args, body=body, decorator_list=[], returns=None, type_comment=None)
    if "type_params" in gast.FunctionDef._fields:  # gast 0.6 on
        node.type_params = []
    return node


def create_assign_node(name, node):
    """``(target, gast.Assign)``: ``name = node``."""
    targets = generate_name_node(name, ctx=gast.Store())
    return targets, gast.Assign(targets=[targets], value=node, type_comment=None)


def get_attribute_full_name(node) -> str:
    assert isinstance(node, gast.Attribute), "Input non-Attribute node to get attribute full name"
    return ast_to_source_code(node).strip()


def create_api_shape_node(tensor_shape_node):
    """``x.shape`` as ``fluid.layers.shape(x)`` (``x.shape[i]`` as ``fluid.layers.shape(x)[i]``)."""
    assert isinstance(tensor_shape_node, (gast.Attribute, gast.Subscript))
    if isinstance(tensor_shape_node, gast.Attribute):
        func = gast.parse("fluid.layers.shape").body[0].value
        return gast.Call(func=func, args=[tensor_shape_node.value], keywords=[])
    result = copy.deepcopy(tensor_shape_node)
    result.value = create_api_shape_node(result.value)
    return result


def get_constant_variable_node(name, value, shape=(1,), dtype="int64"):
    return gast.parse(f'{name} = fluid.layers.fill_constant({list(shape)}, "{dtype}", {value})')


class RenameTransformer(gast.NodeTransformer):
    """Renames a variable (a name or a dotted attribute) throughout a tree."""

    def __init__(self, node):
        assert isinstance(node, gast.AST), "RenameTransformer only accepts gast.AST as input"
        self.root = node
        self.old_name = ""
        self.new_name = ""

    def rename(self, old_name, new_name) -> None:
        self.old_name, self.new_name = old_name, new_name
        self.visit(self.root)

    def visit_Name(self, node):  # noqa: N802
        self.generic_visit(node)
        if node.id == self.old_name:
            node.id = self.new_name
        return node

    def visit_Attribute(self, node):  # noqa: N802
        self.generic_visit(node)
        if get_attribute_full_name(node) == self.old_name:
            return gast.parse(self.new_name).body[0].value
        return node


# -- whether a condition depends on a tensor -------------------------------------------------------------
def is_candidate_node(node) -> bool:
    """A comparison, a bool op, a unary op, a loop or an if, or anything calling ``.numpy()``."""
    if isinstance(node, (gast.Compare, gast.BoolOp, gast.UnaryOp, gast.For, gast.If, gast.While)):
        return True
    return ".numpy()" in ast_to_source_code(node)


def _is_none(node) -> bool:
    return (isinstance(node, gast.Constant) and node.value is None) or (
        isinstance(node, gast.Name) and node.id == "None"
    )


def compare_with_none(node) -> bool:
    """Whether the comparison's left side or first comparator is None."""
    return isinstance(node, gast.Compare) and (_is_none(node.left) or _is_none(node.comparators[0]))


class IsControlFlowVisitor(gast.NodeVisitor):
    """Whether an if / for / while (or a condition) depends on a paddle tensor, so that it must
    become a static control-flow op.

    A condition does when it reads a variable that static analysis (or ``node_var_type_map``) types
    as a tensor, calls ``.numpy()`` or a paddle API, except in a comparison with None. A while also
    does when it breaks or continues; a ``for ... in range(...)`` when range's arguments are tensors
    or the loop breaks or continues.
    """

    def __init__(self, ast_node, static_analysis_visitor=None, node_var_type_map=None):
        assert isinstance(ast_node, gast.AST), f"Type of input node should be gast.AST, but received {type(ast_node)}."
        self.ast_root = ast_node
        if static_analysis_visitor is None:
            from fluidcompat.dygraph.dygraph_to_static.static_analysis import StaticAnalysisVisitor

            static_analysis_visitor = StaticAnalysisVisitor(ast_node)
        self.static_analysis_visitor = static_analysis_visitor
        self.node_to_wrapper_map = static_analysis_visitor.get_node_to_wrapper_map()
        self.node_var_type_map = node_var_type_map
        self.is_control_flow_num = 0
        self._compare_node_tenor_set = set()

    def transform(self) -> bool:
        node = self.ast_root
        if isinstance(node, gast.If):
            self.visit(node.test)
        elif isinstance(node, gast.For):
            self._visit_For(node)
        elif isinstance(node, gast.While):
            self.generic_visit(node.test)
            self._count_exits(node)
        else:
            self.visit(node)
        return self.is_control_flow_num > 0

    def _visit_For(self, node) -> None:  # noqa: N802
        it = node.iter
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"):
            return
        for arg in it.args:
            self.visit(arg)
        self._count_exits(node)

    def _count_exits(self, loop) -> None:
        """A break or continue of ``loop`` itself (not of an inner loop) counts."""
        for child in gast.walk(loop):
            if not isinstance(child, (gast.Break, gast.Continue)):
                continue
            wrapper = self.node_to_wrapper_map.get(child)
            while wrapper is not None and wrapper.parent is not None:
                parent = wrapper.parent.node
                if isinstance(parent, (gast.For, gast.While)):
                    if parent is self.ast_root:
                        self.is_control_flow_num += 1
                    break
                wrapper = wrapper.parent

    def visit_BoolOp(self, node):  # noqa: N802
        for child in node.values:
            self.visit(child)
        return node

    def visit_Compare(self, node):  # noqa: N802
        before = self.is_control_flow_num
        if not compare_with_none(node):
            self.generic_visit(node)
            for child in gast.walk(node):
                if isinstance(child, gast.Subscript):
                    self.generic_visit(child)
                    if isinstance(child.value, gast.Call):
                        self._count_numpy_call(child.value)
        if self.is_control_flow_num > before:
            self._compare_node_tenor_set.add(node)
        return node

    def _count_numpy_call(self, node) -> None:
        if isinstance(node.func, gast.Attribute) and node.func.attr == "numpy":
            self.is_control_flow_num += 1

    def visit_Call(self, node):  # noqa: N802
        self._count_numpy_call(node)
        if is_paddle_api(node):
            self.is_control_flow_num += 1
        return node

    def visit_Name(self, node):  # noqa: N802
        if self._is_node_with_tensor(node, node.id):
            self.is_control_flow_num += 1
        return node

    def visit_Constant(self, node):  # noqa: N802
        if self._is_node_with_tensor(node, node.value):
            self.is_control_flow_num += 1
        return node

    def _is_node_with_tensor(self, node, name_id) -> bool:
        from fluidcompat.dygraph.dygraph_to_static.static_analysis import NodeVarType

        if self.node_var_type_map and isinstance(name_id, str) and name_id:
            var_type = self.node_var_type_map.get(name_id)
            if var_type and var_type & NodeVarType.TENSOR_TYPES:
                return True
        wrapper = self.node_to_wrapper_map.get(node)
        return wrapper is not None and bool(wrapper.node_var_type & NodeVarType.TENSOR_TYPES)

    def get_compare_nodes_with_tensor(self):
        return self._compare_node_tenor_set
