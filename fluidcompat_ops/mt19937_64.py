"""The 64-bit Mersenne Twister (std::mt19937_64) and libstdc++'s uniform_int_distribution over it,
for ops whose fluid kernels drew from them with a seed (tdm_sampler): the same seed gives the same
draws as fluid 1.8. Parameters from Matsumoto and Nishimura's MT19937-64. numpy only."""

from __future__ import annotations

import numpy as np

_N, _M = 312, 156
_A = np.uint64(0xB5026F5AA96619E9)
_UPPER, _LOWER = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
_MAX = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64 seeded with ``seed``: ``next()`` gives its outputs in order."""

    def __init__(self, seed: int) -> None:
        state = [int(seed) & _MAX]
        for i in range(1, _N):
            prev = state[-1]
            state.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & _MAX)
        self._state = np.array(state, dtype=np.uint64)
        self._out: list = []
        self._at = 0

    def _twist(self) -> None:
        mt, one = self._state, np.uint64(1)
        with np.errstate(over="ignore"):
            # each word mixes the next word and the one M ahead: the first N - M from old words, the
            # rest from words this twist already renewed, the last from the renewed first word
            y = (mt[: _N - _M] & _UPPER) | (mt[1 : _N - _M + 1] & _LOWER)
            mt[: _N - _M] = mt[_M:] ^ (y >> one) ^ ((y & one) * _A)
            y = (mt[_N - _M : _N - 1] & _UPPER) | (mt[_N - _M + 1 :] & _LOWER)
            mt[_N - _M : _N - 1] = mt[: _M - 1] ^ (y >> one) ^ ((y & one) * _A)
            y = (mt[_N - 1] & _UPPER) | (mt[0] & _LOWER)
            mt[_N - 1] = mt[_M - 1] ^ (y >> one) ^ ((y & one) * _A)
            t = mt.copy()
            t ^= (t >> np.uint64(29)) & np.uint64(0x5555555555555555)
            t ^= (t << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
            t ^= (t << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
            t ^= t >> np.uint64(43)
        self._out = t.tolist()
        self._at = 0

    def next(self) -> int:
        if self._at == len(self._out):
            self._twist()
        value = self._out[self._at]
        self._at += 1
        return value

    def uniform_int(self, low: int, high: int) -> int:
        """std::uniform_int_distribution<int>(low, high) as libstdc++ draws it from a 64-bit engine:
        outputs at or past the largest multiple of the range are drawn again, then divided down."""
        span = high - low + 1
        scaling = _MAX // span
        past = span * scaling
        while True:
            value = self.next()
            if value < past:
                return value // scaling + low
