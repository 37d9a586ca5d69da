# Golden script: LoDTensor.set_recursive_sequence_lengths / set_lod / has_valid_recursive_sequence_lengths on a
# 5-row tensor: which lengths and offsets fluid 1.8.5 accepted, and that a refused one left the LoD as it was.
import numpy as np
import paddle.fluid as fluid

t = fluid.LoDTensor()
t.set(np.ones((5, 2), "float32"), fluid.CPUPlace())


def attempt(f, arg):
    try:
        f(arg)
        print(arg, t.lod(), t.recursive_sequence_lengths(), t.has_valid_recursive_sequence_lengths())
    except Exception:
        print(arg, "ERR", t.lod())


for lens in ([[2, 3]], [[2, 2]], [[1, 1], [2, 3]], [[1, 1], [2, 2]], [[2], [1, 4]], [], [[0, 5]]):
    attempt(t.set_recursive_sequence_lengths, lens)
for lod in ([[0, 3, 2]], [[1, 5]], [[0, 2, 5]], [[0, 1, 2], [0, 2, 5]], [[0, 2]]):
    attempt(t.set_lod, lod)
