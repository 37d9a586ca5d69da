"""``fluid.dygraph.dygraph_to_static.loop_transformer``: fluid 1.8's analysis of loop variables.

``NameVisitor(root).get_loop_var_names(loop)`` gives ``(loop variables, variables to create)`` of a
``while`` or ``for`` in ``root``: a variable used in the loop and seen before it is a loop variable
unless it is a read-only Python number, bool or string outside the condition; one first given a
value in the loop and read after it is a loop variable that must be created before the loop.
Attributes (``foo.b``) count as variables, ``self.x`` does not.
"""

from __future__ import annotations

import copy
from collections import defaultdict

import gast

from fluidcompat.dygraph.dygraph_to_static.static_analysis import NodeVarType, StaticAnalysisVisitor
from fluidcompat.dygraph.dygraph_to_static.utils import get_attribute_full_name, is_control_flow_to_transform

__all__ = ["NameVisitor"]

_BASIC_TYPES = {NodeVarType.BOOLEAN, NodeVarType.INT, NodeVarType.FLOAT, NodeVarType.STRING}
_WRITE = (gast.Store, gast.AugStore, gast.Del) if hasattr(gast, "AugStore") else (gast.Store, gast.Del)
_READ = (gast.Load, gast.AugLoad) if hasattr(gast, "AugLoad") else (gast.Load,)


class NameVisitor(gast.NodeVisitor):
    """Where each variable node sits relative to the loops of ``root_node`` (see the module's docstring)."""

    def __init__(self, root_node) -> None:
        self.current_seen_vars = set()  # gast.Name / gast.Attribute nodes seen so far
        self.current_loop = []  # the loops being visited, outermost first
        self.nodes_with_scope = []
        self.blacklist_names = {"False", "True", "None"}
        self.before_loop_body_vars = defaultdict(set)
        self.in_loop_vars = defaultdict(set)
        self.write_in_loop = defaultdict(set)
        self.condition_vars = defaultdict(set)
        self.in_condition = False
        self.static_analysis_visitor = StaticAnalysisVisitor(root_node)
        self.node_to_wrapper_map = self.static_analysis_visitor.get_node_to_wrapper_map()
        self.visit(root_node)

    def is_control_flow_loop(self, node) -> bool:
        return is_control_flow_to_transform(node, self.static_analysis_visitor)

    def get_loop_var_names(self, node):
        """``(loop variable names, names to create before the loop)`` of the loop ``node``."""
        assert isinstance(node, (gast.While, gast.For)), "Input node is not gast loop node"
        in_loop_vars = self.in_loop_vars[node]
        before_vars = self.before_loop_body_vars[node]
        in_loop_names = self._names(in_loop_vars)
        before_names = self._names(before_vars)
        after_names = self._names(self.current_seen_vars - before_vars - in_loop_vars, _READ)
        condition_names = self._names(self.condition_vars[node])
        write_names = self._names(self.write_in_loop[node])
        name_to_type = {self._var_node_to_name(v): self.node_to_wrapper_map[v].node_var_type for v in in_loop_vars}

        loop_var_names, create_var_names = set(), set()
        for name in in_loop_names:
            if name in before_names:
                read_only_basic = (
                    name not in condition_names and name not in write_names and bool(name_to_type[name] & _BASIC_TYPES)
                )
                if not read_only_basic:
                    loop_var_names.add(name)
            elif name in after_names:
                loop_var_names.add(name)
                create_var_names.add(name)
        return loop_var_names, create_var_names

    def _note(self, node, written: bool) -> None:
        self.current_seen_vars.add(node)
        for loop in self.current_loop:
            self.in_loop_vars[loop].add(node)
            if written:
                self.write_in_loop[loop].add(node)
            if self.in_condition:
                self.condition_vars[loop].add(node)

    def visit_Name(self, node):  # noqa: N802
        if not self._is_call_func_name_node(node) and node.id not in self.blacklist_names:
            self._note(node, isinstance(node.ctx, _WRITE))
        self.generic_visit(node)

    def visit_Attribute(self, node):  # noqa: N802
        if self._is_call_func_name_node(node):
            return
        if get_attribute_full_name(node).startswith("self."):
            return  # not a name a nested function can take as a parameter
        self.current_seen_vars.add(node)
        for loop in self.current_loop:
            self.in_loop_vars[loop].add(node)

    def visit_FunctionDef(self, node):  # noqa: N802
        self.nodes_with_scope.append(node)
        self.blacklist_names.add(node.name)
        before = copy.copy(self.current_seen_vars)
        self.generic_visit(node)
        self.nodes_with_scope.pop()
        if self.nodes_with_scope:  # a nested function's variables are its own
            self.current_seen_vars = before

    def _visit_loop(self, node, condition_parts) -> None:
        self.current_loop.append(node)
        self.in_condition = True
        for part in condition_parts:
            self.visit(part)
        self.in_condition = False
        self.before_loop_body_vars[node] = copy.copy(self.current_seen_vars)
        self.generic_visit(node)
        self.current_loop.pop()

    def visit_For(self, node):  # noqa: N802
        self._visit_loop(node, [node.target, node.iter])

    def visit_While(self, node):  # noqa: N802
        self._visit_loop(node, [node.test])

    def _names(self, nodes, ctx_types=None):
        return {self._var_node_to_name(n) for n in nodes if ctx_types is None or isinstance(n.ctx, ctx_types)}

    @staticmethod
    def _var_node_to_name(node):
        if isinstance(node, gast.Name):
            return node.id
        if isinstance(node, gast.Attribute):
            return get_attribute_full_name(node)
        return None

    def _is_call_func_name_node(self, node) -> bool:
        parent = self.node_to_wrapper_map[node].parent
        return parent is not None and isinstance(parent.node, gast.Call) and parent.node.func is node
