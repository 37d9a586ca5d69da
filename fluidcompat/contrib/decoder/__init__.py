"""``fluid.contrib.decoder``: the StateCell decoders of fluid 1.x's machine-translation models."""

from . import beam_search_decoder  # noqa: F401
from .beam_search_decoder import BeamSearchDecoder, InitState, StateCell, TrainingDecoder

__all__ = ["InitState", "StateCell", "TrainingDecoder", "BeamSearchDecoder"]
