"""``paddle.fluid.proto.framework_pb2``: fluid 1.8's ``framework.proto`` messages (``OpProto``,
``OpDesc``, ``VarType``, ``VarDesc``, ``BlockDesc``, ``ProgramDesc``...) as protobuf classes, with the
``AttrType`` values (``INT``, ``FLOAT``...) at module level, as fluid's generated module had them.

The classes are built when this module is first imported (``google.protobuf``'s runtime; importing
``paddle.fluid`` does not import it). Field names, numbers, types, labels and defaults are those of
fluid 1.8's ``framework.proto`` (package ``paddle.framework.proto``), so bytes written by fluid parse
here and the other way round. fluidcompat's own program files are read and written by
:mod:`fluidcompat.proto` without protobuf; these classes are for code that uses fluid's messages.
"""

from __future__ import annotations

from fluidcompat.proto._build import build_module, enum, message

R, O, L = "required", "optional", "repeated"

_TABLE = [
    message("Version", [("version", 1, O, "int64", "0")]),
    enum(
        "AttrType",
        [("INT", 0), ("FLOAT", 1), ("STRING", 2), ("INTS", 3), ("FLOATS", 4), ("STRINGS", 5), ("BOOLEAN", 6)]
        + [("BOOLEANS", 7), ("BLOCK", 8), ("LONG", 9), ("BLOCKS", 10), ("LONGS", 11)],
    ),
    message(
        "OpDesc",
        [
            ("type", 3, R, "string"),
            ("inputs", 1, L, "Var"),
            ("outputs", 2, L, "Var"),
            ("attrs", 4, L, "Attr"),
            ("is_target", 5, O, "bool", "false"),
        ],
        nested=[
            message(
                "Attr",
                [
                    ("name", 1, R, "string"),
                    ("type", 2, R, "AttrType"),
                    ("i", 3, O, "int32"),
                    ("f", 4, O, "float"),
                    ("s", 5, O, "string"),
                    ("ints", 6, L, "int32"),
                    ("floats", 7, L, "float"),
                    ("strings", 8, L, "string"),
                    ("b", 10, O, "bool"),
                    ("bools", 11, L, "bool"),
                    ("block_idx", 12, O, "int32"),
                    ("l", 13, O, "int64"),
                    ("blocks_idx", 14, L, "int32"),
                    ("longs", 15, L, "int64"),
                ],
            ),
            message("Var", [("parameter", 1, R, "string"), ("arguments", 2, L, "string")]),
        ],
    ),
    message(
        "OpProto",
        [
            ("type", 1, R, "string"),
            ("inputs", 2, L, "Var"),
            ("outputs", 3, L, "Var"),
            ("attrs", 4, L, "Attr"),
            ("comment", 5, R, "string"),
        ],
        nested=[
            message(
                "Var",
                [
                    ("name", 1, R, "string"),
                    ("comment", 2, R, "string"),
                    ("duplicable", 3, O, "bool", "false"),
                    ("intermediate", 4, O, "bool", "false"),
                    ("dispensable", 5, O, "bool", "false"),
                ],
            ),
            message(
                "Attr",
                [
                    ("name", 1, R, "string"),
                    ("type", 2, R, "AttrType"),
                    ("comment", 3, R, "string"),
                    ("generated", 4, O, "bool", "false"),
                ],
            ),
        ],
    ),
    message(
        "VarType",
        [
            ("type", 1, R, "Type"),
            ("selected_rows", 2, O, "TensorDesc"),
            ("lod_tensor", 3, O, "LoDTensorDesc"),
            ("tensor_array", 4, O, "LoDTensorArrayDesc"),
            ("reader", 5, O, "ReaderDesc"),
            ("tuple", 7, O, "Tuple"),
        ],
        nested=[
            message("TensorDesc", [("data_type", 1, R, "Type"), ("dims", 2, L, "int64")]),
            message("LoDTensorDesc", [("tensor", 1, R, "TensorDesc"), ("lod_level", 2, O, "int32", "0")]),
            message("LoDTensorArrayDesc", [("tensor", 1, R, "TensorDesc"), ("lod_level", 2, O, "int32", "0")]),
            message("ReaderDesc", [("lod_tensor", 1, L, "LoDTensorDesc")]),
            message("Tuple", [("element_type", 1, L, "Type")]),
        ],
        enums=[
            enum(
                "Type",
                # element types, then variable kinds, in the file's order
                [("BOOL", 0), ("INT16", 1), ("INT32", 2), ("INT64", 3), ("FP16", 4), ("FP32", 5), ("FP64", 6)]
                + [("SIZE_T", 19), ("UINT8", 20), ("INT8", 21)]
                + [("LOD_TENSOR", 7), ("SELECTED_ROWS", 8), ("FEED_MINIBATCH", 9), ("FETCH_LIST", 10)]
                + [("STEP_SCOPES", 11), ("LOD_RANK_TABLE", 12), ("LOD_TENSOR_ARRAY", 13), ("PLACE_LIST", 14)]
                + [("READER", 15), ("RAW", 17), ("TUPLE", 18)],
            )
        ],
    ),
    message(
        "VarDesc",
        [
            ("name", 1, R, "string"),
            ("type", 2, R, "VarType"),
            ("persistable", 3, O, "bool", "false"),
            ("need_check_feed", 4, O, "bool", "false"),
        ],
    ),
    message(
        "BlockDesc",
        [
            ("idx", 1, R, "int32"),
            ("parent_idx", 2, R, "int32"),
            ("vars", 3, L, "VarDesc"),
            ("ops", 4, L, "OpDesc"),
            ("forward_block_idx", 5, O, "int32", "-1"),
        ],
    ),
    message(
        "CompatibleInfo",
        [("version", 1, R, "string"), ("type", 2, R, "Type")],
        enums=[
            enum(
                "Type",
                [("COMPATIBLE", 0), ("DEFINITELY_NOT", 1), ("POSSIBLE", 2), ("BUG_FIX", 3), ("PRECISION_CHANGE", 4)],
            )
        ],
    ),
    message(
        "OpCompatibleMap",
        [("pair", 1, L, "OpCompatiblePair"), ("default_required_version", 2, O, "string")],
        nested=[
            message("OpCompatiblePair", [("op_name", 1, R, "string"), ("compatible_info", 2, R, "CompatibleInfo")])
        ],
    ),
    message(
        "ProgramDesc",
        [("blocks", 1, L, "BlockDesc"), ("version", 4, O, "Version"), ("op_compatible_map", 3, O, "OpCompatibleMap")],
        reserved=[2],
    ),
]

__all__ = build_module(globals(), "framework.proto", "paddle.framework.proto", _TABLE)
del R, O, L
