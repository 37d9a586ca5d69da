# Used by data_generator.py (not a golden of its own): a fluid.incubate.data_generator script, as a
# dataset's pipe command runs it ("stdin": each input line "score word word ..." becomes a sample of
# the slots words, score and label; else the samples it makes itself, and its checks of bad samples).
import sys

import paddle.fluid.incubate.data_generator as dg


class Words(dg.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def local_iter():
            if line is None:
                for i in range(5):
                    yield [("words", [i, i + 1]), ("label", [i % 2])]
                return
            parts = line.split()
            if not parts:
                return
            yield [("words", [int(w) for w in parts[1:]]), ("score", [float(parts[0])]), ("label", [len(parts) % 2])]

        return local_iter

    def generate_batch(self, samples):
        def local_iter():
            for s in reversed(samples):
                yield s

        return local_iter


class Strings(dg.MultiSlotStringDataGenerator):
    def generate_sample(self, line):
        def local_iter():
            yield [("a", ["x", "y"]), ("b", ["1"])]

        return local_iter


g = Words()
g.set_batch(2)
if len(sys.argv) > 1 and sys.argv[1] == "stdin":
    g.run_from_stdin()
else:
    g.run_from_memory()
    Strings().run_from_memory()
    print(g._proto_info)
    w = Words()
    for bad in ([("w", [1])], [("w", [])], [(1, [1])], [("w", (1,))], [("v", [1])]):
        try:
            w._gen_str(bad)
            print("ok", w._proto_info)
        except ValueError as e:
            print("ValueError", e)
    print(w._gen_str([("w", [2.5])]).strip(), w._proto_info)
