"""Running a pipeline program (``PipelineOptimizer``, fluidcompat/pipeline.py): its sections in turn,
one batch at a time, as ``Executor.train_from_dataset`` does with one."""

from __future__ import annotations

from typing import Dict, Sequence

from fluidcompat.framework import Program


def _reads(ops) -> set:
    return {n for op in ops for n in op.input_arg_names}


def _writes(ops) -> set:
    return {n for op in ops for n in op.output_arg_names}


class SectionRunner:
    """Runs a pipeline program's sections in turn for one batch, each with an executor on its
    place; the values a section writes and a later one reads are handed on. Each ``fetch_names``
    value comes from the last section writing it (a variable no section writes: from the last
    section holding it)."""

    def __init__(self, program: Program, executor, fetch_names: Sequence[str]) -> None:
        opt = program._pipeline_opt
        self.sections = [s["program"] for s in opt["section_program_list"]]
        self.executors = [executor if p == executor.place else type(executor)(p) for p in opt["place_list"]]
        self.reads = [_reads(p.global_block().ops) for p in self.sections]
        self.writes = [_writes(p.global_block().ops) for p in self.sections]
        hand_on = [sorted(w & set().union(*self.reads[i + 1 :])) for i, w in enumerate(self.writes)]
        written = set().union(*self.writes)
        from_where = {}
        for i, prog in enumerate(self.sections):
            for n in fetch_names:
                if n in self.writes[i] or (n not in written and n in prog.global_block().vars):
                    from_where[n] = i
        missing = [n for n in fetch_names if n not in from_where]
        if missing:
            raise ValueError(f"fetch_list variable(s) {missing} are in none of the pipeline's sections")
        self.fetch_names = list(fetch_names)
        # per section: what it fetches (for later sections, then for the caller)
        self.wanted = [
            list(dict.fromkeys(hand_on[i] + [n for n in fetch_names if from_where[n] == i]))
            for i in range(len(self.sections))
        ]

    def run(self, feed: Dict[str, object], scope) -> list:
        """One batch through every section; the fetched values (LoDTensors)."""
        values: Dict[str, object] = {}
        passed = dict(feed)
        for i, (prog, exe) in enumerate(zip(self.sections, self.executors)):
            want = self.wanted[i]
            feed_i = {n: v for n, v in passed.items() if n in self.reads[i]}
            got = exe.run(prog, feed=feed_i, fetch_list=want, scope=scope, return_numpy=False)
            for n, v in zip(want, got):
                passed[n] = v
                values[n] = v
        return [values[n] for n in self.fetch_names]
