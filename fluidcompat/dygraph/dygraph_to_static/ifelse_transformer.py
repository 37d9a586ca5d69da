"""``fluid.dygraph.dygraph_to_static.ifelse_transformer``: fluid 1.8's analysis of ``if`` statements.

``get_name_ids(nodes)`` lists each variable's uses (their gast contexts: Param, Store, Load, in
the order the statements run them: an assignment's value before its targets); ``IfConditionVisitor``
tells whether an if's condition depends on a tensor and rewrites it as one bool tensor (``.numpy()``
calls dropped, ``and`` / ``or`` / ``not`` as logical ops, Python parts as bool constants), returning
the new condition and the assignments that compute it; ``transform_if_else`` and ``create_cond_node``
give the branch functions and the ``fluid.layers.cond`` call fluid 1.8 made of an if.
"""

from __future__ import annotations

import copy
from collections import defaultdict

import gast

from fluidcompat import unique_name
from fluidcompat.dygraph.dygraph_to_static.static_analysis import NodeVarType
from fluidcompat.dygraph.dygraph_to_static.utils import (
    IsControlFlowVisitor,
    ast_to_source_code,
    compare_with_none,
    create_assign_node,
    create_funcDef_node,
    is_candidate_node,
)

__all__ = [
    "IfConditionVisitor",
    "NameVisitor",
    "NodeTestTransformer",
    "create_cond_node",
    "get_name_ids",
    "parse_cond_args",
    "parse_cond_return",
    "transform_if_else",
]

TRUE_FUNC_PREFIX = "true_fn"
FALSE_FUNC_PREFIX = "false_fn"
LOGIC_AND_PREFIX = "logic_and"
LOGIC_OR_PREFIX = "logic_or"
LOGIC_NOT_PREFIX = "logic_not"
PLAIN_TENSOR_PREFIX = "bool_tensor"


def _expr(source: str):
    return gast.parse(source).body[0].value


class NameVisitor(gast.NodeVisitor):
    """The uses of each variable name (``name_ids``: name -> contexts), stopping at ``end_node``.

    With an ``end_node`` (what comes before a statement), a name an ``if`` gives a value only in
    one branch, or a nested function's names, do not count after it; names called as functions and
    names in ``return`` never count.
    """

    def __init__(self, end_node=None) -> None:
        self.end_node = end_node
        self.name_ids = defaultdict(list)
        self.ancestor_nodes = []
        self._is_finished = False
        self._candidate_ctxs = (gast.Store, gast.Load, gast.Param)

    def visit(self, node):
        if node is self.end_node or self._is_finished:
            self._is_finished = True
            return None
        self.ancestor_nodes.append(node)
        result = getattr(self, "visit_" + type(node).__name__, self.generic_visit)(node)
        self.ancestor_nodes.pop()
        return result

    def visit_If(self, node):  # noqa: N802
        if not self.end_node:
            self.generic_visit(node)
            return
        before = copy.deepcopy(self.name_ids)
        body_ids = self._visit_child(node.body)
        if self._is_finished:
            self._update_name_ids(before)
            return
        else_ids = self._visit_child(node.orelse)
        if self._is_finished:
            self._update_name_ids(before)
            return
        # only what both branches assign is known after the if
        for name in self._find_new_name_ids(body_ids, else_ids):
            before[name].append(gast.Store())
        self.name_ids = before

    def visit_Attribute(self, node):  # noqa: N802
        if not self._is_call_func_name_node(node):
            self.generic_visit(node)

    def visit_Name(self, node):  # noqa: N802
        if node.id in ("True", "False", "None") or self._is_call_func_name_node(node):
            return
        if isinstance(node.ctx, self._candidate_ctxs):
            self.name_ids[node.id].append(node.ctx)

    def visit_Assign(self, node):  # noqa: N802
        self.visit(node.value)  # the value runs before the targets are set
        for target in node.targets:
            self.visit(target)

    def visit_FunctionDef(self, node):  # noqa: N802
        if not self.end_node:
            self.generic_visit(node)
            return
        before = copy.deepcopy(self.name_ids)
        self.name_ids = defaultdict(list)
        self.generic_visit(node)
        if self._is_finished:
            self._update_name_ids(before)
        else:
            self.name_ids = before

    def visit_Return(self, node):  # noqa: N802
        return

    def _visit_child(self, node):
        self.name_ids = defaultdict(list)
        for item in node if isinstance(node, list) else [node]:
            if isinstance(item, gast.AST):
                self.visit(item)
        return copy.deepcopy(self.name_ids)

    @staticmethod
    def _find_new_name_ids(body_name_ids, else_name_ids):
        def stored(ctxs):
            return any(isinstance(c, gast.Store) for c in ctxs)

        both = set(body_name_ids) & set(else_name_ids)
        return {n for n in both if stored(body_name_ids[n]) and stored(else_name_ids[n])}

    def _is_call_func_name_node(self, node) -> bool:
        if len(self.ancestor_nodes) > 1:
            parent = self.ancestor_nodes[-2]
            return isinstance(parent, gast.Call) and parent.func is node
        return False

    def _update_name_ids(self, new_name_ids) -> None:
        for name, ctxs in new_name_ids.items():
            self.name_ids[name] = ctxs + self.name_ids[name]


def get_name_ids(nodes, end_node=None):
    """name -> the contexts of its uses in ``nodes`` (see NameVisitor)."""
    visitor = NameVisitor(end_node)
    for node in nodes:
        visitor.visit(node)
    return visitor.name_ids


def _arguments(names):
    args = gast.arguments(
        args=[gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None) for n in names],
        posonlyargs=[],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=None,
        kwarg=None,
        defaults=[],
    )
    return args


def parse_cond_args(var_ids_dict, return_ids=None, ctx=gast.Load):
    """The parameters of a branch function: the names the branch first reads (and ``return_ids``), sorted."""
    names = [n for n, ctxs in var_ids_dict.items() if isinstance(ctxs[0], ctx)]
    if return_ids:
        names.extend(set(return_ids) - set(names))
    return _arguments(sorted(names))


def parse_cond_return(parent_vars_dict, if_vars_dict, else_vars_dict):
    """``(return names, modified names)`` of an if: variables from before it that either branch
    assigns, and new ones both branches assign; sorted."""

    def assigned(ids):
        return {n for n, ctxs in ids.items() if any(isinstance(c, (gast.Store, gast.Param)) for c in ctxs)}

    modified = {n for n in assigned(if_vars_dict) | assigned(else_vars_dict) if n in parent_vars_dict}
    new = {n for n in assigned(if_vars_dict) if n not in parent_vars_dict} & {
        n for n in assigned(else_vars_dict) if n not in parent_vars_dict
    }
    return sorted(modified | new), list(modified - new)


def transform_if_else(node, root):
    """``(true function, false function, return names)`` of the if ``node`` inside ``root``."""
    parent_ids = get_name_ids([root], end_node=node)
    if_ids = get_name_ids(node.body)
    else_ids = get_name_ids(node.orelse)
    return_ids, modified_ids = parse_cond_return(parent_ids, if_ids, else_ids)
    true_fn = create_funcDef_node(
        node.body, unique_name.generate(TRUE_FUNC_PREFIX), parse_cond_args(if_ids, modified_ids), return_ids
    )
    false_fn = create_funcDef_node(
        node.orelse, unique_name.generate(FALSE_FUNC_PREFIX), parse_cond_args(else_ids, modified_ids), return_ids
    )
    return true_fn, false_fn, return_ids


def create_cond_node(return_name_ids, pred, true_func, false_func, is_if_expr=False):
    """``names = fluid.layers.cond(pred, lambda: true_fn(args), lambda: false_fn(args))`` (an expression
    statement when nothing is returned; ``is_if_expr``: the branches are expressions)."""

    def branch(func):
        body = func
        if not is_if_expr:
            call_args = [
                gast.Name(id=a.id, ctx=gast.Load(), annotation=None, type_comment=None) for a in func.args.args
            ]
            body = gast.Call(
                func=gast.Name(id=func.name, ctx=gast.Load(), annotation=None, type_comment=None),
                args=call_args,
                keywords=[],
            )
        return gast.Lambda(args=_arguments([]), body=body)

    call = gast.Call(func=_expr("fluid.layers.cond"), args=[pred, branch(true_func), branch(false_func)], keywords=[])
    if return_name_ids:
        return create_assign_node(return_name_ids, call)[1]
    return gast.Expr(value=call)


class NodeTestTransformer(gast.NodeTransformer):
    """An if's condition as one bool tensor: comparisons on tensors stay (``.numpy()`` dropped), others
    become ``fill_constant(bool(...))``, ``and`` / ``or`` / ``not`` become logical ops, each
    intermediate assigned to a new name (``get_new_assign_nodes``)."""

    def __init__(self, ast_node, compare_nodes_with_tensor=None, node_to_wrapper_map=None) -> None:
        self.ast_root = ast_node
        self._compare_nodes_with_tensor = compare_nodes_with_tensor if compare_nodes_with_tensor is not None else set()
        self.node_to_wrapper_map = node_to_wrapper_map if node_to_wrapper_map is not None else {}
        self._new_assign_nodes = []

    def transform(self):
        if not is_candidate_node(self.ast_root):
            return self._create_cast_node(self.ast_root)
        return self.visit(self.ast_root)

    def visit_Call(self, node):  # noqa: N802
        # Tensor.numpy()[i] -> Tensor[i]
        if isinstance(node.func, gast.Attribute) and node.func.attr == "numpy":
            node = node.func.value
        self.generic_visit(node)
        return node

    def visit_UnaryOp(self, node):  # noqa: N802
        self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        value = _expr(f"fluid.layers.logical_not({ast_to_source_code(node.operand).strip()})")
        return self._assign(LOGIC_NOT_PREFIX, value)

    def visit_BoolOp(self, node):  # noqa: N802
        for i, child in enumerate(node.values):
            if is_candidate_node(child):
                continue
            wrapper = self.node_to_wrapper_map.get(child)
            if wrapper is not None and wrapper.node_var_type & NodeVarType.TENSOR_TYPES:
                node.values[i] = self._create_cast_node(child)
            else:
                node.values[i] = self._create_bool_node(child)
        self.generic_visit(node)
        return self._create_logic_node(node)

    def visit_Compare(self, node):  # noqa: N802
        if compare_with_none(node) or node not in self._compare_nodes_with_tensor:
            return self._create_bool_node(node)
        self.generic_visit(node)
        return node

    def _assign(self, prefix, value):
        name, assign = create_assign_node(unique_name.generate(prefix), value)
        self._new_assign_nodes.append(assign)
        return name

    def _create_cast_node(self, node):
        return self._assign(
            PLAIN_TENSOR_PREFIX, _expr(f"fluid.layers.cast(x={ast_to_source_code(node).strip()}, dtype='bool')")
        )

    def _create_bool_node(self, node):
        source = ast_to_source_code(node).strip()
        return self._assign(
            PLAIN_TENSOR_PREFIX, _expr(f"fluid.layers.fill_constant(shape=[1], dtype='bool', value=bool({source}))")
        )

    def _create_logic_node(self, node):
        if isinstance(node.op, gast.And):
            kind, prefix = "and", LOGIC_AND_PREFIX
        elif isinstance(node.op, gast.Or):
            kind, prefix = "or", LOGIC_OR_PREFIX
        else:
            raise TypeError("Only supports and/or syntax in control flow if statement.")
        values = list(node.values)
        assert len(values) > 1, f"The length of BoolOp should be at least 2, but received {len(values)}."
        result = values[0]
        for other in values[1:]:  # left to right, two at a time
            x, y = ast_to_source_code(result).strip(), ast_to_source_code(other).strip()
            result = self._assign(prefix, _expr(f"fluid.layers.logical_{kind}(x={x}, y={y})"))
        return result

    def get_new_assign_nodes(self):
        return self._new_assign_nodes

    def set_compare_nodes_with_tensor(self, nodes_set):
        self._compare_nodes_with_tensor = set(nodes_set)
        return self._compare_nodes_with_tensor


class IfConditionVisitor:
    """Whether an if's condition depends on a tensor (``is_control_flow``) and, if so, the condition
    as one bool tensor (``transform``: ``(new condition, assignments to put before it)``)."""

    def __init__(self, node, static_analysis_visitor=None, node_var_type_map=None) -> None:
        self.node = node
        self.static_analysis_visitor = static_analysis_visitor
        self.visitor = IsControlFlowVisitor(node, static_analysis_visitor, node_var_type_map)
        self.transformer = NodeTestTransformer(node, node_to_wrapper_map=self.visitor.node_to_wrapper_map)
        self.compare_nodes_with_tensor = set()
        self._is_control_flow_if = False

    def is_control_flow(self) -> bool:
        self._is_control_flow_if = self.visitor.transform()
        return self._is_control_flow_if

    def transform(self):
        if not self._is_control_flow_if:
            return self.node, []
        self.compare_nodes_with_tensor = self.visitor.get_compare_nodes_with_tensor()
        self.transformer.set_compare_nodes_with_tensor(self.compare_nodes_with_tensor)
        new_node = self.transformer.transform()
        return new_node, self.transformer.get_new_assign_nodes()
