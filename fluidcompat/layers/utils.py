"""``fluid.layers.utils``: the nested-structure helpers fluid 1.8's RNN and control-flow layers use
and seq2seq scripts call (``map_structure`` over decoder states), and ``convert_to_list``.

A structure nests lists, tuples, namedtuples and dicts (a dict's values in sorted key order); any
other object is a leaf."""

from __future__ import annotations

import collections.abc
import numbers

__all__ = [
    "convert_to_list",
    "is_sequence",
    "flatten",
    "pack_sequence_as",
    "map_structure",
    "assert_same_structure",
    "hold_mutable_vars",
    "copy_mutable_vars",
]


def convert_to_list(value, n, name, dtype=int):
    """``[value] * n`` for one number, else the ``n`` values of ``value`` (each convertible by
    ``dtype``), with an error naming ``name`` otherwise."""
    if isinstance(value, numbers.Integral if dtype is int else dtype):
        return [value] * n
    try:
        values = list(value)
    except TypeError:
        raise ValueError(f"The {name}'s type must be list or tuple. Received: {value}") from None
    if len(values) != n:
        raise ValueError(f"The {name}'s length must be {n}. Received: {value}")
    for v in values:
        try:
            dtype(v)
        except (ValueError, TypeError):
            raise ValueError(
                f"The {name}'s type must be a list or tuple of {n} {dtype} . Received: {value} including element "
                f"{v} of type {type(v)}"
            ) from None
    return values


def is_sequence(seq) -> bool:
    """Whether ``seq`` nests further (a dict, or a sequence other than a string)."""
    return isinstance(seq, dict) or (isinstance(seq, collections.abc.Sequence) and not isinstance(seq, str))


def _keys(d):
    try:
        return sorted(d)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys.") from None


def _children(seq):
    return [seq[k] for k in _keys(seq)] if isinstance(seq, dict) else list(seq)


def _like(instance, items):
    """``items`` in ``instance``'s container type (a dict keeps its own key order)."""
    if isinstance(instance, dict):
        by_key = dict(zip(_keys(instance), items))
        return type(instance)((k, by_key[k]) for k in instance)
    if isinstance(instance, tuple) and hasattr(instance, "_fields"):
        return type(instance)(*items)
    return type(instance)(items)


def flatten(nest) -> list:
    """The leaves of ``nest`` in order."""
    if not is_sequence(nest):
        return [nest]
    return [leaf for child in _children(nest) for leaf in flatten(child)]


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence``'s items arranged as ``structure``'s leaves."""
    if not is_sequence(flat_sequence):
        raise TypeError("flat_sequence must be a sequence")
    if not is_sequence(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"Structure is a scalar but len(flat_sequence) == {len(flat_sequence)} > 1")
        return flat_sequence[0]
    count = len(flatten(structure))
    if count != len(flat_sequence):
        raise ValueError(
            f"Could not pack sequence. Structure had {count} elements, but flat_sequence had "
            f"{len(flat_sequence)} elements.  Structure: {structure}, flat_sequence: {flat_sequence}."
        )
    items = iter(flat_sequence)

    def build(s):
        return _like(s, [build(c) for c in _children(s)]) if is_sequence(s) else next(items)

    return build(structure)


def map_structure(func, *structure):
    """``func`` applied to the leaves of the structures side by side, arranged as the first."""
    leaves = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*each) for each in zip(*leaves)])


def hold_mutable_vars(structure) -> bool:
    return any(is_sequence(s) for s in structure)


def copy_mutable_vars(structure):
    return pack_sequence_as(structure, list(flatten(structure)))


def _assert_same(nest1, nest2, check_types):
    if is_sequence(nest1) != is_sequence(nest2):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {nest1}\n\nSecond structure: {nest2}."
        )
    if not is_sequence(nest1):
        return
    if check_types:
        if type(nest1) is not type(nest2):
            raise TypeError(
                "The two structures don't have the same sequence type. First structure has type "
                f"{type(nest1)}, while second structure has type {type(nest2)}."
            )
        if isinstance(nest1, dict) and set(nest1) != set(nest2):
            raise ValueError(
                "The two dictionaries don't have the same set of keys. First structure has keys "
                f"{set(nest1)}, while second structure has keys {set(nest2)}."
            )
    for a, b in zip(_children(nest1), _children(nest2)):
        _assert_same(a, b, check_types)


def assert_same_structure(nest1, nest2, check_types=True) -> None:
    """Raise unless the two structures nest alike (and, with ``check_types``, in the same types)."""
    n1, n2 = len(flatten(nest1)), len(flatten(nest2))
    if n1 != n2:
        raise ValueError(
            "The two structures don't have the same number of elements.\n\n"
            f"First structure ({n1} elements): {nest1}\n\nSecond structure ({n2} elements): {nest2}"
        )
    _assert_same(nest1, nest2, check_types)
