"""``fluid.dygraph.dygraph_to_static.static_analysis``: fluid 1.8's type inference over a gast tree.

``StaticAnalysisVisitor(root)`` wraps every node (``AstNodeWrapper``: parent, children, the set of
``NodeVarType`` values the node may have) and records, per function scope, the types of the
variables assigned there (``get_var_env()``). Types come from constants, comparisons and bool ops
(BOOLEAN), arithmetic (``NodeVarType.binary_op_output_type``), ``to_variable`` (TENSOR), paddle APIs
(PADDLE_RETURN_TYPES), numpy APIs (NUMPY_NDARRAY), the constant defaults of parameters, and the
returns of functions defined in the source (a function's type is the union of what it returns).
"""

from __future__ import annotations

import gast

from fluidcompat.dygraph.dygraph_to_static.utils import index_in_list, is_dygraph_api, is_numpy_api, is_paddle_api

__all__ = ["AstNodeWrapper", "NodeVarType", "StaticAnalysisVisitor"]


class NodeVarType:
    """The kinds of values static analysis tells apart (fluid 1.8's numbers)."""

    ERROR = -1  # analysis failed
    UNKNOWN = 0  # not known
    STATEMENT = 1  # a statement, not a value
    CALLABLE = 2

    # Python values
    NONE = 100
    BOOLEAN = 101
    INT = 102
    FLOAT = 103
    STRING = 104
    TENSOR = 105
    NUMPY_NDARRAY = 106

    # Python collections
    LIST = 200
    SET = 201
    DICT = 202

    PADDLE_DYGRAPH_API = 300
    PADDLE_CONTROL_IF = 301
    PADDLE_CONTROL_WHILE = 302
    PADDLE_CONTROL_FOR = 303
    # what a paddle API returns (its source may not be readable)
    PADDLE_RETURN_TYPES = 304

    # a node of one of these types depends on a tensor
    TENSOR_TYPES = {TENSOR, PADDLE_RETURN_TYPES}

    @staticmethod
    def binary_op_output_type(in_type1, in_type2):
        """The type of ``a <op> b``: the wider of two numeric types (BOOLEAN < INT < FLOAT < NUMPY_NDARRAY
        < TENSOR); UNKNOWN gives way to the other; anything else, or an array with a tensor, is UNKNOWN."""
        if in_type1 == in_type2:
            return in_type1
        if in_type1 == NodeVarType.UNKNOWN:
            return in_type2
        if in_type2 == NodeVarType.UNKNOWN:
            return in_type1
        numeric = (
            NodeVarType.BOOLEAN,
            NodeVarType.INT,
            NodeVarType.FLOAT,
            NodeVarType.NUMPY_NDARRAY,
            NodeVarType.TENSOR,
        )
        if in_type1 not in numeric or in_type2 not in numeric:
            return NodeVarType.UNKNOWN
        arrays = (NodeVarType.NUMPY_NDARRAY, NodeVarType.TENSOR)
        if in_type1 in arrays and in_type2 in arrays:
            return NodeVarType.UNKNOWN
        return max(in_type1, in_type2)


class AstNodeWrapper:
    """A gast node with what the analysis learnt of it: its parent and children wrappers and types."""

    def __init__(self, node) -> None:
        self.node = node
        self.parent = None
        self.children = []
        self.node_var_type = {NodeVarType.UNKNOWN}


class AstVarScope:
    """The variables of one scope (the script, a function, a class) and their types."""

    SCOPE_TYPE_SCRIPT = 0
    SCOPE_TYPE_FUNCTION = 1
    SCOPE_TYPE_CLASS = 2

    def __init__(self, scope_name="", scope_type=SCOPE_TYPE_SCRIPT, parent_scope=None) -> None:
        self.sub_scopes = []
        self.name_to_id = {}
        self.id_to_type = {}
        self.cur_id = 0
        self.scope_name = scope_name
        self.scope_type = scope_type
        self.parent_scope = parent_scope
        if parent_scope is not None:
            parent_scope.sub_scopes.append(self)

    def add_var_type(self, var_name, node_var_type) -> None:
        """Widen the variable's types by ``node_var_type`` (set it when it was unknown)."""
        var_type = self.get_var_type(var_name)
        if var_type == {NodeVarType.UNKNOWN}:
            self.set_var_type(var_name, node_var_type)
        elif isinstance(node_var_type, set):
            var_type.update(node_var_type)
        else:
            var_type.add(node_var_type)

    def set_var_type(self, var_name, node_var_type) -> None:
        if var_name not in self.name_to_id:
            self.name_to_id[var_name] = self.cur_id
            self.cur_id += 1
        types = node_var_type if isinstance(node_var_type, set) else {node_var_type}
        self.id_to_type[self.name_to_id[var_name]] = types

    def get_var_type(self, var_name):
        """The variable's types here, else in the enclosing scopes; {UNKNOWN} where none has it."""
        if var_name in self.name_to_id:
            return self.id_to_type[self.name_to_id[var_name]]
        if self.parent_scope is None:
            return {NodeVarType.UNKNOWN}
        return self.parent_scope.get_var_type(var_name)


class AstVarEnv:
    """The scopes met so far; ``cur_scope`` is the one being analysed."""

    def __init__(self) -> None:
        self.cur_scope = AstVarScope()

    def enter_scope(self, scope_name, scope_type):
        self.cur_scope = AstVarScope(scope_name, scope_type, parent_scope=self.cur_scope)
        return self.cur_scope

    def exit_scope(self):
        assert self.cur_scope.parent_scope is not None, (
            "Call exit_scope in AstVarEnv when current scope doesn't have parent scope."
        )
        self.cur_scope = self.cur_scope.parent_scope
        return self.cur_scope

    def get_parent_scope(self):
        assert self.cur_scope.parent_scope is not None, (
            "Call parent_scope in AstVarEnv when current scope doesn't have parent scope."
        )
        return self.cur_scope.parent_scope

    def add_var_type(self, var_name, node_var_type) -> None:
        self.cur_scope.add_var_type(var_name, node_var_type)

    def set_var_type(self, var_name, node_var_type) -> None:
        self.cur_scope.set_var_type(var_name, node_var_type)

    def get_var_type(self, var_name):
        return self.cur_scope.get_var_type(var_name)

    def get_scope_var_type(self) -> dict:
        """The current scope's own variables and their types."""
        return {name: self.cur_scope.get_var_type(name) for name in self.cur_scope.name_to_id}


class StaticAnalysisVisitor:
    """Wraps each node of a tree and infers the types of its values (see the module's docstring)."""

    def __init__(self, ast_root=None) -> None:
        if ast_root is not None:
            self.run(ast_root)

    def run(self, ast_root) -> None:
        self.node_wrapper_root = None
        self.ancestor_wrappers = []
        self.node_to_wrapper_map = {}
        self.var_env = AstVarEnv()
        self.dfs_visit(ast_root)

    def dfs_visit(self, node):
        # gast shares some nodes (the contexts): one wrapper per node object
        wrapper = self.node_to_wrapper_map.get(node)
        if wrapper is None:
            wrapper = self.node_to_wrapper_map[node] = AstNodeWrapper(node)
        if self.node_wrapper_root is None:
            self.node_wrapper_root = wrapper
        if self.ancestor_wrappers:
            parent = self.ancestor_wrappers[-1]
            parent.children.append(wrapper)
            wrapper.parent = parent
        self.ancestor_wrappers.append(wrapper)
        for child in gast.iter_child_nodes(node):
            if isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef)):
                self.var_env.enter_scope(child.name, AstVarScope.SCOPE_TYPE_FUNCTION)
                self.dfs_visit(child)
                self.var_env.exit_scope()
            else:
                self.dfs_visit(child)
        self.ancestor_wrappers.pop()
        wrapper.node_var_type = self._get_node_var_type(wrapper)
        return wrapper.node_var_type

    def get_node_wrapper_root(self):
        return self.node_wrapper_root

    def get_node_to_wrapper_map(self):
        return self.node_to_wrapper_map

    def get_var_env(self):
        return self.var_env

    @staticmethod
    def _get_constant_node_type(node):
        assert isinstance(node, gast.Constant), f"Type of input node should be gast.Constant, but received {type(node)}"
        value = node.value
        if value is None:
            return {NodeVarType.NONE}
        if isinstance(value, bool):
            return {NodeVarType.BOOLEAN}
        if isinstance(value, int):
            return {NodeVarType.INT}
        if isinstance(value, float):
            return {NodeVarType.FLOAT}
        if isinstance(value, str):
            return {NodeVarType.STRING}
        return {NodeVarType.UNKNOWN}

    def _type_of(self, node):
        return self.node_to_wrapper_map[node].node_var_type

    def _get_node_var_type(self, wrapper):
        node = wrapper.node
        if isinstance(node, gast.Constant):
            return self._get_constant_node_type(node)
        if isinstance(node, (gast.BoolOp, gast.Compare)):
            return {NodeVarType.BOOLEAN}
        if isinstance(node, gast.Dict):
            return {NodeVarType.DICT}
        if isinstance(node, gast.Set):
            return {NodeVarType.SET}
        if isinstance(node, gast.UnaryOp):
            return self._type_of(node.operand)
        if isinstance(node, gast.BinOp):
            return {
                NodeVarType.binary_op_output_type(a, b)
                for a in self._type_of(node.left)
                for b in self._type_of(node.right)
            }
        if isinstance(node, gast.Assign):
            value_type = self._type_of(node.value)
            for target in node.targets:
                if isinstance(target, gast.Name):
                    self.node_to_wrapper_map[target].node_var_type = value_type
                    self.var_env.set_var_type(target.id, value_type)
            return value_type
        if isinstance(node, gast.Name):
            return self._name_type(wrapper, node)
        if isinstance(node, gast.Return):
            if node.value is None:
                return {NodeVarType.NONE}
            return_type = self._type_of(node.value)
            scope = self.var_env.cur_scope
            assert scope.scope_type == AstVarScope.SCOPE_TYPE_FUNCTION, "Return at non-function scope"
            self.var_env.get_parent_scope().add_var_type(scope.scope_name, return_type)
            return return_type
        if isinstance(node, gast.Call):
            if is_dygraph_api(node) and isinstance(node.func, gast.Attribute) and node.func.attr == "to_variable":
                return {NodeVarType.TENSOR}
            if is_paddle_api(node):
                return {NodeVarType.PADDLE_RETURN_TYPES}
            if is_numpy_api(node):
                return {NodeVarType.NUMPY_NDARRAY}
            if isinstance(node.func, gast.Name):
                return self.var_env.get_var_type(node.func.id)
        return {NodeVarType.STATEMENT}

    def _name_type(self, wrapper, node):
        if node.id == "None":
            return {NodeVarType.NONE}
        if node.id in ("True", "False"):
            return {NodeVarType.BOOLEAN}
        parent = wrapper.parent.node if wrapper.parent is not None else None
        if isinstance(parent, gast.arguments):
            # a parameter: the type of its constant default, if it has one
            var_type = {NodeVarType.UNKNOWN}
            if parent.defaults:
                index = index_in_list(parent.args, node)
                n_args = len(parent.args)
                if index != -1 and n_args - index <= len(parent.defaults):
                    default = parent.defaults[index - n_args]
                    if isinstance(default, gast.Constant):
                        var_type = self._get_constant_node_type(default)
                        self.var_env.set_var_type(node.id, var_type)
            return var_type
        return self.var_env.get_var_type(node.id)
