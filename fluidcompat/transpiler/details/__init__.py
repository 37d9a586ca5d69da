"""``fluid.transpiler.details``: helpers of fluid's transpilers (the readable program printer, a
union-find, the server-port wait and the record of where a job's variables live on its servers)."""

from fluidcompat.transpiler.details.checkport import wait_server_ready
from fluidcompat.transpiler.details.program_utils import (
    block_to_code,
    delete_ops,
    find_op_by_input_arg,
    find_op_by_output_arg,
    get_indent_space,
    op_to_code,
    program_to_code,
    variable_to_code,
)
from fluidcompat.transpiler.details.ufind import UnionFind
from fluidcompat.transpiler.details.vars_distributed import VarDistributed, VarsDistributed, VarStruct

__all__ = [
    "block_to_code",
    "delete_ops",
    "find_op_by_input_arg",
    "find_op_by_output_arg",
    "get_indent_space",
    "op_to_code",
    "program_to_code",
    "variable_to_code",
    "UnionFind",
    "wait_server_ready",
    "VarStruct",
    "VarDistributed",
    "VarsDistributed",
]
