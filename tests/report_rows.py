"""Reading printed profiler reports back in tests: each report's Event Summary rows and its GpuMemcpy lines."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

Rows = Dict[Tuple[str, str], int]


def tables(text: str) -> List[Tuple[Rows, List[Tuple[str, str]]]]:
    """Per report: its Event Summary as {(parent, event): calls} (parent '' for a top row, else the
    top row it is listed under) and its GpuMemCpy Summary lines as (name, calls)."""
    result = []
    for chunk in text.split("Profiling Report")[1:]:
        rows: Rows = {}
        parent = ""
        for ln in chunk.split("Event Summary")[1].splitlines()[3:]:
            row = re.match(r"( *)(\S.*?) {2,}(\d+) ", ln)
            if row is None:  # the table's end
                break
            name, calls = row.group(2), int(row.group(3))
            if row.group(1):
                rows[(parent, name)] = rows.get((parent, name), 0) + calls
            else:
                parent = name
                rows[("", name)] = calls
        memcpy = re.findall(r"^ *(GpuMemcpy\w*) +Calls: (\d+)", chunk, re.M)
        result.append((rows, memcpy))
    return result
