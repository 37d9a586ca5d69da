"""``fluid.incubate.data_generator``: turn raw lines into the slot format ``fluid.DatasetFactory``'s
datasets read. A script subclasses ``MultiSlotDataGenerator``, writes ``generate_sample(line)``
(an iterator factory of ``[(slot name, [values]), ...]``) and calls ``run_from_stdin()``; the
dataset runs it as its pipe command (``dataset.set_pipe_command("python my_generator.py")``). Each
sample becomes one line: per slot, the number of values, then the values."""

from __future__ import annotations

import sys
from typing import List, Optional, Tuple

__all__ = ["DataGenerator", "MultiSlotDataGenerator", "MultiSlotStringDataGenerator"]


class DataGenerator:
    def __init__(self) -> None:
        self._proto_info: Optional[List[Tuple[str, str]]] = None
        self.batch_size_ = 32

    def _set_line_limit(self, line_limit) -> None:
        if not isinstance(line_limit, int):
            raise ValueError(f"line_limit{type(line_limit)} must be in int type")
        if line_limit < 1:
            raise ValueError("line_limit can not less than 1")
        self._line_limit = line_limit

    def set_batch(self, batch_size: int) -> None:
        """How many samples ``generate_batch`` gets at a time."""
        self.batch_size_ = batch_size

    def _write(self, lines) -> None:
        """The samples of ``lines`` (raw lines; None: generate_sample's own source), batched through
        generate_batch, as slot-format lines on stdout."""
        batch = []

        def flush() -> None:
            for sample in self.generate_batch(batch)():
                sys.stdout.write(self._gen_str(sample))
            batch.clear()

        for line in lines:
            for sample in self.generate_sample(line)():
                if sample is None:
                    continue
                batch.append(sample)
                if len(batch) == self.batch_size_:
                    flush()
        if batch:
            flush()

    def run_from_memory(self) -> None:
        """The samples ``generate_sample(None)`` makes (for trying a generator out)."""
        self._write([None])

    def run_from_stdin(self) -> None:
        """Each stdin line through generate_sample (what a dataset's pipe command does)."""
        self._write(sys.stdin)

    def _gen_str(self, line) -> str:
        raise NotImplementedError("pls use MultiSlotDataGenerator or PairWiseDataGenerator")

    def generate_sample(self, line):
        raise NotImplementedError(
            "Please rewrite this function to return a list or tuple: "
            "[(name, [feasign, ...]), ...] or ((name, [feasign, ...]), ...)"
        )

    def generate_batch(self, samples):
        """The batch's samples as they are; override to change a batch at once."""

        def local_iter():
            yield from samples

        return local_iter


def _fields(line, example: str):
    if not isinstance(line, (list, tuple)):
        raise ValueError(f"the output of process() must be in list or tuple type. Example: {example}")
    return line


class MultiSlotStringDataGenerator(DataGenerator):
    """Samples whose values are strings, written as they are."""

    def _gen_str(self, line) -> str:
        parts = []
        for _name, elements in _fields(line, "[('words', ['1926', '08', '17']), ('label', ['1'])]"):
            parts.append(" ".join([str(len(elements))] + list(elements)))
        return " ".join(parts) + "\n"


class MultiSlotDataGenerator(DataGenerator):
    """Samples whose values are ints or floats; the first sample fixes the slots' names and order,
    and a slot that ever holds a float is a float slot (else uint64)."""

    def _gen_str(self, line) -> str:
        fields = _fields(line, "[('words', [1926, 8, 17]), ('label', [1])]")
        first = self._proto_info is None
        if first:
            self._proto_info = []
        elif len(fields) != len(self._proto_info):
            raise ValueError("the complete field set of two given line are inconsistent.")
        parts = []
        for index, (name, elements) in enumerate(fields):
            if not isinstance(name, str):
                raise ValueError(f"name{type(name)} must be in str type")
            if not isinstance(elements, list):
                raise ValueError(f"elements{type(elements)} must be in list type")
            if not elements:
                raise ValueError("the elements of each field can not be empty, you need padding it in process().")
            if first:
                self._proto_info.append((name, "uint64"))
            elif name != self._proto_info[index][0]:
                want = self._proto_info[index][0]
                raise ValueError(f"the field name of two given line are not match: require<{want}>, get<{name}>.")
            for elem in elements:
                if isinstance(elem, float):
                    self._proto_info[index] = (name, "float")
                elif not isinstance(elem, int) or isinstance(elem, bool):
                    raise ValueError(f"the type of element{type(elem)} must be in int or float")
            parts.append(" ".join([str(len(elements))] + [str(e) for e in elements]))
        return " ".join(parts) + "\n"
