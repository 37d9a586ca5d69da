"""fluid 1.8's CPU random numbers for a fixed seed, so that a seeded program draws what fluid drew.

NOTE: [Seeded draws]
fluid 1.8's CPU kernels of uniform_random, gaussian_random (and their batch_size_like forms) and
dropout, given a seed (the op's ``seed``, which the layers and initializers take from
``Program.random_seed``), made a ``std::minstd_rand`` seeded with it on every run and drew from it in
element order through libstdc++'s distributions:

- the n-th number of the engine is ``s * 48271^n mod (2^31 - 1)`` (``s`` the seed, taken as an
  unsigned long, mod 2^31 - 1, 0 made 1);
- ``generate_canonical<float>`` takes one number: ``float(x - 1) / 2^31``; the ``double`` form takes
  two: ``((x1 - 1) + (x2 - 1) * r) / r^2`` with ``r = 2^31 - 2``; either is kept below 1;
- ``uniform_real_distribution`` is ``canonical * (max - min) + min`` in the output's precision;
- truncated_gaussian_random maps a uniform ``u`` in [FLT_MIN, 1) through the inverse normal CDF
  between -2 and 2 standard deviations: ``sqrt(2) * erfinv(2p - 1) * std + mean`` with
  ``p = cdf(-2) + (cdf(2) - cdf(-2)) * u`` (here in float64, then rounded);
- ``uniform_int_distribution`` (randint) takes ``x - 1`` below the largest multiple of the range's
  size under 2^31 - 2, then divides by the scaling (numbers at or past it are skipped);
- sampling_id draws one uniform per row from ``min`` to ``max`` (in the probabilities' precision);
- nce's samplers (unlike the others, one per run from the op's seed): uniform and log-uniform drew
  from a ``std::mt19937_64`` (``uniform_int_distribution(0, classes - 1)``; ``exp(u * log(classes))
  - 1`` modulo ``classes - 1`` for a canonical ``u`` of one 64-bit number), the custom distribution
  from a 32-bit ``std::mt19937``: a class by ``uniform_int_distribution``, then a canonical double
  (two numbers) above the class's alias probability takes its alias;
- random_crop advanced one engine per instance (see crop_offsets);
- shuffle_batch used ``std::default_random_engine`` (minstd_rand0) instead (see shuffle_order);
- dpsgd drew one polar-method normal per step (its ``v1`` half) from the engine;
- sample_logits (sampled softmax) drew its classes once per batch from the same log-uniform sampler;
- randperm (unlike the others) seeded glibc's ``rand()`` with ``srand`` and shuffled 0 .. n-1 with
  ``std::random_shuffle``: element i swapped with ``rand() % (i + 1)``, i from 1;
- ``normal_distribution`` is Marsaglia's polar method: canonical pairs ``x, y`` made ``2u - 1``, kept
  where ``0 < x^2 + y^2 <= 1``, each kept pair giving ``y * m`` then ``x * m`` with
  ``m = sqrt(-2 log(r2) / r2)``, then ``* std + mean``.

The numbers come in chunks: a table of 48271^1 .. 48271^CHUNK per device, each chunk the table times
the chunk's first state, so a draw of any size costs a few tensor ops per chunk and no more memory
than a chunk. torch's log and sqrt may round a float32 normal one unit in the last place off
glibc's.
"""

from __future__ import annotations

import math

import torch

M = 2147483647  # 2^31 - 1
A = 48271
CHUNK = 1 << 18
_A_CHUNK = pow(A, CHUNK, M)
_tables: dict = {}
_BELOW_ONE_32 = 1.0 - 2.0**-24
_BELOW_ONE_64 = 1.0 - 2.0**-53


def _table(device) -> torch.Tensor:
    """48271^k mod (2^31 - 1) for k = 1 .. CHUNK, on ``device``."""
    key = str(device)
    t = _tables.get(key)
    if t is None:
        host = _tables.get("cpu")
        if host is None:
            vals, v = [], 1
            for _ in range(CHUNK):
                v = v * A % M
                vals.append(v)
            _tables["cpu"] = host = torch.tensor(vals, dtype=torch.int64)
        t = _tables[key] = host.to(device)
    return t


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _start(seed: int) -> int:
    return (int(seed) % 2**64) % M or 1  # the engine's seed() takes an unsigned long


class _Minstd:
    """One engine drawn number by number: std::minstd_rand, or with ``multiplier`` 16807
    std::minstd_rand0 (libstdc++'s std::default_random_engine)."""

    def __init__(self, seed: int, multiplier: int = A) -> None:
        self.x, self.a = _start(seed), multiplier

    def next(self) -> int:
        self.x = self.x * self.a % M
        return self.x

    def discard(self, n: int) -> None:
        self.x = self.x * pow(self.a, n, M) % M

    def uniform_int(self, size: int) -> int:
        """``uniform_int_distribution(0, size - 1)``: numbers at or past the largest multiple of
        ``size`` under the engine's range are drawn again (randint's vectorized form is the same)."""
        scaling = (M - 2) // size
        past = size * scaling
        while True:
            r = self.next() - 1
            if r < past:
                return r // scaling

    def float_canonical(self):
        """``generate_canonical<float>`` of the next number (a numpy float32)."""
        import numpy as np

        return min(np.float32(self.next() - 1) / np.float32(2147483648.0), np.float32(_BELOW_ONE_32))


def _mt19937_numbers(seed: int):
    """std::mt19937's numbers for ``seed``, without end (numpy's legacy RandomState is that engine)."""
    import numpy as np

    engine = np.random.RandomState(int(seed) & 0xFFFFFFFF)
    while True:
        yield from engine.randint(0, 2**32, size=4096, dtype=np.uint64).tolist()


def _log_uniform(engine, range_: int) -> int:
    """fluid's LogUniformSampler(range_) over a std::mt19937_64: ``exp(u * log(range_ + 1)) - 1``
    modulo ``range_`` for the canonical double ``u`` of one 64-bit number."""
    u = min(float(engine.next()) / 18446744073709551616.0, _BELOW_ONE_64)
    return (int(math.exp(u * math.log(range_ + 1))) - 1) % range_


def _draw_chunks(seed: int, device):
    """The engine's numbers in order, CHUNK at a time (int64 tensors), without end."""
    table, state = _table(device), _start(seed)
    while True:
        yield table * state % M
        state = state * _A_CHUNK % M


def _float_canonical(draws: torch.Tensor) -> torch.Tensor:
    return torch.clamp((draws - 1).to(torch.float32) / 2147483648.0, max=_BELOW_ONE_32)


def _double_canonical(draws: torch.Tensor) -> torch.Tensor:
    r = 2147483646.0
    d = (draws - 1).to(torch.float64)
    return torch.clamp((d[0::2] + d[1::2] * r) / (r * r), max=_BELOW_ONE_64)


def float_canonical(seed: int, n: int, device, double: bool = False) -> torch.Tensor:
    """The first ``n`` values of ``generate_canonical<float>`` (float32, [n]), or with ``double``
    of ``generate_canonical<double>`` (float64, two numbers each)."""
    out = torch.empty(n, dtype=torch.float64 if double else torch.float32, device=device)
    chunks = _draw_chunks(seed, device)
    per_chunk = CHUNK // 2 if double else CHUNK
    for at in range(0, n, per_chunk):
        take = min(per_chunk, n - at)
        draws = next(chunks)
        out[at : at + take] = _double_canonical(draws)[:take] if double else _float_canonical(draws[:take])
    return out


_keep_cache: dict = {}
_KEEP_CACHE_BYTES = 1 << 29


def dropout_keep(seed: int, shape, p: float, device) -> torch.Tensor:
    """dropout's keep mask for ``seed`` (bool, ``shape``): where fluid's draw was at least ``p``. The
    same seed gives the same mask every run (as in fluid), so masks are kept (up to 512 MiB) and a
    seeded dropout in a training loop costs a look-up after its first step."""
    key = (int(seed), tuple(int(d) for d in shape), float(p), str(device))
    keep = _keep_cache.get(key)
    if keep is None:
        keep = float_canonical(seed, _numel(shape), device).reshape(key[1]) >= torch.tensor(p, dtype=torch.float32)
        if sum(t.numel() for t in _keep_cache.values()) + keep.numel() > _KEEP_CACHE_BYTES:
            _keep_cache.clear()
        _keep_cache[key] = keep
    return keep


def uniform(seed: int, shape, low: float, high: float, dtype, device) -> torch.Tensor:
    """uniform_random's values for ``seed`` (float64 from double canonicals, else float32)."""
    n = _numel(shape)
    double = dtype == torch.float64
    real = torch.float64 if double else torch.float32
    vals = float_canonical(seed, n, device, double)  # in place from here: a table's init holds one copy
    low_t, high_t = (torch.tensor(v, dtype=torch.float32).to(real) for v in (low, high))
    vals.mul_((high_t - low_t).to(device)).add_(low_t.to(device))
    return vals.to(dtype).reshape(list(shape))


def randint(seed: int, shape, low: int, high: int, dtype, device) -> torch.Tensor:
    """randint's values for ``seed`` (ints in [low, high)), or None for a range wider than the
    engine's (fluid's libstdc++ combined several numbers there)."""
    n = _numel(shape)
    size = int(high) - int(low)  # the distribution's urange + 1
    span = M - 2  # the engine's max - min
    if size <= 0 or size > span:
        return None
    scaling = span // size
    past = size * scaling
    out = torch.empty(n, dtype=torch.int64, device=device)
    at = 0
    chunks = _draw_chunks(seed, device)
    while at < n:
        ret = next(chunks) - 1
        ret = ret[ret < past][: n - at]
        out[at : at + ret.numel()] = ret // scaling + int(low)
        at += ret.numel()
    return out.to(dtype).reshape(list(shape))


def nce_negatives(sampler: int, seed: int, rows: int, k: int, classes: int, alias=None, alias_probs=None):
    """nce's ``k`` negatives per row for ``seed`` (numpy int64 [rows, k]): sampler 0 uniform, 1
    log-uniform, 2 the custom distribution's alias tables."""
    import numpy as np

    from fluidcompat_ops.mt19937_64 import MT19937_64

    out = np.empty((rows, k), dtype=np.int64)
    if sampler == 2:
        raw = _mt19937_numbers(seed)
        scaling = (2**32 - 1) // classes  # uniform_int_distribution(0, classes - 1) over 32-bit numbers
        past = classes * scaling
        alias_probs = np.asarray(alias_probs, dtype=np.float32)
        for i in range(rows):
            for j in range(k):
                v = next(raw)
                while v >= past:
                    v = next(raw)
                cls = v // scaling
                u = (float(next(raw)) + float(next(raw)) * 4294967296.0) / 18446744073709551616.0
                out[i, j] = alias[cls] if u > alias_probs[cls] and alias[cls] != -1 else cls
        return out
    engine = MT19937_64(int(seed) & 0xFFFFFFFF)  # the sampler keeps the seed as an unsigned int
    if sampler == 1:
        for i in range(rows):
            for j in range(k):
                out[i, j] = _log_uniform(engine, classes - 1)
        return out
    for i in range(rows):
        for j in range(k):
            out[i, j] = engine.uniform_int(0, classes - 1)
    return out


def sampled_classes(seed: int, labels, num_samples: int, classes: int, uniq: bool = True):
    """sample_logits' samples and probabilities (numpy [rows, num_true + num_samples]), as fluid 1.8
    drew them: ``num_samples`` classes from the log-uniform sampler (a std::mt19937_64 seeded with
    ``seed``; with ``uniq`` distinct ones, counting the tries), shared by every row after the row's
    true labels; each class's probability P(c) = log((c + 2) / (c + 1)) / log(classes + 1) made the
    expected count under the tries: ``P * num_samples`` when every try counted, else
    ``1 - (1 - P) ** tries``."""
    import numpy as np

    from fluidcompat_ops.mt19937_64 import MT19937_64

    engine = MT19937_64(int(seed) & 0xFFFFFFFF)
    log_range = math.log(classes + 1)  # (this sampler's range is the class count: nce's is one less)
    drawn, tries = [], 0
    while len(drawn) < num_samples:
        c = _log_uniform(engine, classes)
        tries += 1
        if not uniq or c not in drawn:
            drawn.append(c)
    labels = np.asarray(labels, dtype=np.int64).reshape(len(labels), -1)
    samples = np.concatenate([labels, np.tile(np.array(drawn, dtype=np.int64), (labels.shape[0], 1))], 1)
    p = np.log((samples + 2.0) / (samples + 1.0)) / log_range
    probs = p * num_samples if tries == num_samples else -np.expm1(tries * np.log1p(-p))
    return samples, probs


def crop_offsets(seed: int, instances: int, dims, sizes):
    """random_crop's offsets per instance and the seed it carries to the next run, as fluid 1.8 drew
    them: instance i's engine is the seed's advanced by i * rank numbers, one
    ``uniform_int_distribution(0, dim - size)`` per cropped dim (drawn also where there is no room);
    the next seed is the number after instances * rank."""
    rank = len(sizes)
    offsets = []
    for i in range(instances):
        engine = _Minstd(seed)
        engine.discard(i * rank)
        offsets.append([engine.uniform_int(int(d) - int(s) + 1) for d, s in zip(dims, sizes)])
    engine = _Minstd(seed)
    engine.discard(instances * rank)
    return offsets, engine.next()


def dpsgd_noise(seed: int, sigma: float) -> float:
    """dpsgd's one Gaussian draw for ``seed``, as fluid 1.8's CPU kernel made it in float32: polar
    pairs ``v = 2u - 1`` from the engine's uniform draws until ``0 < s = v1^2 + v2^2 < 1``, then
    ``v1 * sqrt(-2 log(s) / s) * sigma``."""
    import numpy as np

    f32 = np.float32
    engine = _Minstd(seed)
    while True:
        v1 = f32(2) * engine.float_canonical() - f32(1)
        v2 = f32(2) * engine.float_canonical() - f32(1)
        s = v1 * v1 + v2 * v2
        if 0 < s < 1:
            break
    return float(v1 * np.sqrt(f32(-2) * np.log(s) / s) * f32(sigma))


def shuffle_order(seed: int, n: int):
    """shuffle_batch's order for ``seed`` and the seed it carries on, as fluid 1.8 drew them: 0 .. n-1
    shuffled by ``std::shuffle`` (a plain Fisher-Yates with ``uniform_int_distribution(0, i)``) over
    ``std::default_random_engine`` (minstd_rand0: multiplier 16807), then the engine's next number."""
    engine = _Minstd(seed, multiplier=16807)
    order = list(range(n))
    for i in range(1, n):
        j = engine.uniform_int(i + 1)
        order[i], order[j] = order[j], order[i]
    return order, engine.next()


def _glibc_rand(seed: int):
    """glibc's rand() after srand(seed) (its TYPE_3 additive generator), without end."""
    r = [int(seed) & 0xFFFFFFFF]
    if r[0] >= 2**31:
        r[0] -= 2**32
    for i in range(1, 31):
        hi, lo = divmod(r[i - 1], 127773)
        word = 16807 * lo - 2836 * hi
        r.append(word + 2147483647 if word < 0 else word)
    r += r[:3]
    r = [x & 0xFFFFFFFF for x in r]
    for i in range(34, 344):
        r.append((r[i - 31] + r[i - 3]) & 0xFFFFFFFF)
    while True:
        v = (r[-31] + r[-3]) & 0xFFFFFFFF
        r.append(v)
        del r[0]
        yield v >> 1


def randperm(seed: int, n: int) -> list:
    """randperm's permutation of 0 .. n-1 for ``seed``."""
    perm = list(range(n))
    rand = _glibc_rand(seed)
    for i in range(1, n):
        j = next(rand) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def truncated_normal(seed: int, shape, mean: float, std: float, dtype, device) -> torch.Tensor:
    """truncated_gaussian_random's values for ``seed``."""
    n = _numel(shape)
    u = float_canonical(seed, n, device, dtype == torch.float64).to(torch.float64)
    u = torch.clamp(u, min=2.0**-126)  # the distribution's lower end, FLT_MIN
    low, high = (1 + math.erf(-2 / math.sqrt(2))) / 2, (1 + math.erf(2 / math.sqrt(2))) / 2
    p = low + (high - low) * u
    vals = math.sqrt(2) * torch.erfinv(2 * p - 1) * float(std) + float(mean)
    return vals.to(dtype).reshape(list(shape))


def normal(seed: int, shape, mean: float, std: float, dtype, device) -> torch.Tensor:
    """gaussian_random's values for ``seed`` (float64 from double canonicals, else float32)."""
    n = _numel(shape)
    double = dtype == torch.float64
    real = torch.float64 if double else torch.float32
    out = torch.empty(n + 1, dtype=real, device=device)  # (a last pair's second value may spill over)
    at = 0
    chunks = _draw_chunks(seed, device)
    while at < n:
        draws = next(chunks)
        u = _double_canonical(draws) if double else _float_canonical(draws)
        x, y = 2 * u[0::2] - 1, 2 * u[1::2] - 1
        r2 = x * x + y * y
        kept = (r2 <= 1.0) & (r2 != 0.0)
        x, y, r2 = x[kept], y[kept], r2[kept]
        mult = torch.sqrt(-2 * torch.log(r2) / r2)
        pairs = torch.stack([y * mult, x * mult], 1).reshape(-1)[: n + 1 - at]
        out[at : at + pairs.numel()] = pairs
        at += pairs.numel()
    vals = out[:n].mul_(torch.tensor(std, dtype=torch.float32).to(real))
    vals.add_(torch.tensor(mean, dtype=torch.float32).to(real))
    return vals.to(dtype).reshape(list(shape))
