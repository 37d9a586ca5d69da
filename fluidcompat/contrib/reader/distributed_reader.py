"""``distributed_batch_reader``: each trainer of a multi-process run takes its own batches."""

from __future__ import annotations

import os

__all__ = ["distributed_batch_reader"]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"distributed_batch_reader: {name} must be an integer. Received {value!r}") from None


def distributed_batch_reader(batch_reader):
    """Wrap a batch reader for ``PADDLE_TRAINERS_NUM`` trainers (``fluidcompat launch`` sets it and
    ``PADDLE_TRAINER_ID``): of every ``PADDLE_TRAINERS_NUM`` consecutive batches, trainer k gets the
    k-th; a last incomplete group is dropped, so every trainer takes the same number of steps. With
    one trainer the batches pass unchanged."""
    trainers = _env_int("PADDLE_TRAINERS_NUM", 1)
    trainer_id = _env_int("PADDLE_TRAINER_ID", 0)
    if not 0 <= trainer_id < trainers:
        raise ValueError(
            f"distributed_batch_reader: PADDLE_TRAINER_ID {trainer_id} is not below PADDLE_TRAINERS_NUM {trainers}"
        )

    def reader():
        if trainers == 1:
            yield from batch_reader()
            return
        print(f"start data reader (trainers_num: {trainers}, trainer_id: {trainer_id})")
        group = []
        for batch in batch_reader():
            group.append(batch)
            if len(group) == trainers:
                yield group[trainer_id]
                group = []

    return reader
