# fluid.layers.utils' nested-structure helpers (seq2seq scripts map decoder states with them) and
# convert_to_list, with their errors. Prints JSON.
import collections
import json
import sys

from paddle.fluid.layers import utils

P = collections.namedtuple("P", ["a", "b"])
s = {"z": [1, (2, 3)], "a": P(4, [5])}
out = {
    "flat": utils.flatten(s),
    "map": str(utils.map_structure(lambda x: x * 10, s)),
    "map2": str(utils.map_structure(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])),
    "pack": str(utils.pack_sequence_as([0, {"b": 0, "a": 0}, (0,)], [1, 2, 3, 4])),
    "scalar": utils.flatten(7),
    "str_leaf": utils.flatten(["ab", ["cd"]]),
    "is_seq": [utils.is_sequence(x) for x in ([], (), {}, "s", 1, None)],
    "conv": [utils.convert_to_list(3, 2, "stride"), utils.convert_to_list((1, 2), 2, "stride")],
    "hold": [utils.hold_mutable_vars([1, [2]]), utils.hold_mutable_vars([1, 2])],
    "copy": str(utils.copy_mutable_vars([1, [2, (3,)]])),
}
errs = []
for f in (
    lambda: utils.pack_sequence_as([0, 0], [1]),
    lambda: utils.pack_sequence_as(0, [1, 2]),
    lambda: utils.pack_sequence_as([0], 1),
    lambda: utils.assert_same_structure([1, [2]], [1, 2]),
    lambda: utils.assert_same_structure([1, 2], (1, 2)),
    lambda: utils.assert_same_structure({"a": 1}, {"b": 1}),
    lambda: utils.assert_same_structure([1, [2]], [[1], 2]),
    lambda: utils.convert_to_list((1, 2, 3), 2, "stride"),
    lambda: utils.convert_to_list(None, 2, "stride"),
    lambda: utils.convert_to_list((1, "x"), 2, "stride"),
    lambda: utils.flatten({1: 0, "a": 1}),
):
    try:
        f()
        errs.append(None)
    except Exception as e:
        errs.append([type(e).__name__, str(e)])
out["errors"] = errs
json.dump(out, sys.stdout, indent=1, sort_keys=True)
