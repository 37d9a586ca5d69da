"""``fluid.DataFeedDesc``: a data feed description read from its protobuf text file (fluid 1.8's
``data_feed.proto`` schema), changed with ``set_batch_size`` / ``set_dense_slots`` / ``set_use_slots``
and written back by ``desc()`` in protobuf's text format."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

__all__ = ["DataFeedDesc"]

# field -> (number, kind); kind: "string", "int", "bool", a message name; repeated fields end in []
_SCHEMA: Dict[str, Dict[str, Tuple[int, str]]] = {
    "DataFeedDesc": {
        "name": (1, "string"),
        "batch_size": (2, "int"),
        "multi_slot_desc": (3, "MultiSlotDesc"),
        "pipe_command": (4, "string"),
        "thread_num": (5, "int"),
        "rank_offset": (6, "string"),
        "pv_batch_size": (7, "int"),
        "input_type": (8, "int"),
    },
    "MultiSlotDesc": {"slots": (1, "Slot[]"), "uid_slot": (2, "string")},
    "Slot": {
        "name": (1, "string"),
        "type": (2, "string"),
        "is_dense": (3, "bool"),
        "is_used": (4, "bool"),
        "shape": (5, "int[]"),
    },
}
_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|([{}:])|([^\s{}:"\']+))')


def _tokens(text: str) -> List[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise ValueError(f"data feed description: cannot read {text[pos : pos + 20]!r}")
            break
        pos = m.end()
        if m.group(1) is None and m.group(0).strip():
            out.append(m.group(0).strip())
    return out


def _value(token: str, kind: str, field: str):
    try:
        if kind == "string":
            if token[:1] not in "\"'":
                raise ValueError
            return bytes(token[1:-1], "utf-8").decode("unicode_escape")
        if kind == "int":
            return int(token)
        if kind == "bool":
            return {"true": True, "false": False, "True": True, "False": False, "1": True, "0": False}[token]
    except (ValueError, KeyError):
        raise ValueError(f"data feed description: field '{field}' takes a {kind}, received {token}") from None
    raise AssertionError(kind)


def _parse(tokens: List[str], pos: int, message: str, closing: bool):
    fields: Dict[str, object] = {}
    schema = _SCHEMA[message]
    while pos < len(tokens):
        name = tokens[pos]
        if name == "}":
            if not closing:
                raise ValueError("data feed description: '}' without '{'")
            return fields, pos + 1
        if name not in schema:
            raise ValueError(f'Message type "paddle.framework.{message}" has no field named "{name}".')
        _, kind = schema[name]
        repeated = kind.endswith("[]")
        kind = kind.rstrip("[]")
        pos += 1
        if pos < len(tokens) and tokens[pos] == ":":
            pos += 1
        if kind in _SCHEMA:
            if pos >= len(tokens) or tokens[pos] != "{":
                raise ValueError(f"data feed description: field '{name}' takes a {{ ... }} block")
            value, pos = _parse(tokens, pos + 1, kind, True)
        else:
            if pos >= len(tokens):
                raise ValueError(f"data feed description: field '{name}' has no value")
            value, pos = _value(tokens[pos], kind, name), pos + 1
        if repeated:
            fields.setdefault(name, []).append(value)
        else:
            fields[name] = value
    if closing:
        raise ValueError(f"data feed description: a {message} block is not closed")
    return fields, pos


def _text(fields: Dict[str, object], message: str, indent: str = "") -> str:
    schema = _SCHEMA[message]
    lines = []
    for name in sorted(fields, key=lambda n: schema[n][0]):
        kind = schema[name][1].rstrip("[]")
        for value in fields[name] if isinstance(fields[name], list) else [fields[name]]:
            if kind in _SCHEMA:
                lines.append(f"{indent}{name} {{\n{_text(value, kind, indent + '  ')}{indent}}}\n")
            elif kind == "string":
                escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                lines.append(f'{indent}{name}: "{escaped}"\n')
            elif kind == "bool":
                lines.append(f"{indent}{name}: {'true' if value else 'false'}\n")
            else:
                lines.append(f"{indent}{name}: {value}\n")
    return "".join(lines)


class DataFeedDesc:
    """A data feed description: ``DataFeedDesc("data.proto")``; ``desc()`` gives its text."""

    def __init__(self, proto_file):
        with open(proto_file, "r") as f:
            fields, _ = _parse(_tokens(f.read()), 0, "DataFeedDesc", False)
        # "cat" unless the file says otherwise (fluid 1.8.5 refused a file that set pipe_command)
        self.proto_desc = {"pipe_command": "cat", **fields}
        self._name_to_index = {}
        if self.proto_desc.get("name") == "MultiSlotDataFeed":
            slots = self.proto_desc.get("multi_slot_desc", {}).get("slots", [])
            self._name_to_index = {slot.get("name"): i for i, slot in enumerate(slots)}

    def _slot(self, name, api):
        if self.proto_desc.get("name") != "MultiSlotDataFeed":
            raise ValueError(f"Only MultiSlotDataFeed needs {api}, please check your datafeed.proto")
        if name not in self._name_to_index:
            raise ValueError(f"{api}: no slot named '{name}'; the slots are {sorted(self._name_to_index)}")
        return self.proto_desc["multi_slot_desc"]["slots"][self._name_to_index[name]]

    def set_batch_size(self, batch_size):
        self.proto_desc["batch_size"] = int(batch_size)

    def set_dense_slots(self, dense_slots_name):
        """Mark these slots dense (a fixed number of values per instance)."""
        slots = [self._slot(n, "set_dense_slots") for n in dense_slots_name]
        for slot in slots:
            slot["is_dense"] = True

    def set_use_slots(self, use_slots_name):
        """Mark these slots used (read into the program)."""
        slots = [self._slot(n, "set_use_slots") for n in use_slots_name]
        for slot in slots:
            slot["is_used"] = True

    def desc(self) -> str:
        """The description in protobuf's text format."""
        return _text(self.proto_desc, "DataFeedDesc")
