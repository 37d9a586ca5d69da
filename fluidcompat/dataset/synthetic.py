"""Generated stand-ins for fluid's mnist and uci_housing files, written where ``paddle.dataset``
reads them, so that legacy training scripts run on a machine without the real data.

``python -m fluidcompat.dataset.synthetic [--home DIR] [--force]``

mnist: 28x28 digits drawn from a 5x7 bitmap font, scaled, shifted, thickened and noised at random
(6000 training and 1000 test images, idx format, gzipped). uci_housing: 506 rows of 13 features
and a price that is a noisy linear function of them, in housing.data's whitespace format.
These are not the real datasets: accuracies on them say nothing about models on the real ones.
"""

from __future__ import annotations

import argparse
import gzip
import os
import struct
import sys

import numpy as np

_FONT = {  # 5 columns x 7 rows, one string per row
    0: ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    1: ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    2: ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    3: ["11111", "00010", "00100", "00010", "00001", "10001", "01110"],
    4: ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    5: ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    6: ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    7: ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    8: ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    9: ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
}


def digit_images(n: int, rng: np.random.RandomState, desc: str = "mnist images"):
    """``n`` 28x28 uint8 digit images and their labels (a progress bar on a terminal's stderr)."""
    from fluidcompat.progress import bar

    glyphs = {d: np.array([[int(c) for c in row] for row in rows], np.float32) for d, rows in _FONT.items()}
    images = np.zeros((n, 28, 28), np.float32)
    labels = rng.randint(0, 10, n)
    progress = bar(n, desc, unit="img")
    for i, label in enumerate(labels):
        progress.update()
        sy, sx = rng.randint(2, 4), rng.randint(2, 4)
        g = np.kron(glyphs[label], np.ones((sy, sx), np.float32))
        if rng.rand() < 0.5:  # a thicker stroke
            g = np.maximum(g, np.roll(g, 1, axis=1))
        h, w = g.shape
        top, left = rng.randint(0, 28 - h + 1), rng.randint(0, 28 - w + 1)
        images[i, top : top + h, left : left + w] = g
    progress.close()
    images = images * rng.uniform(0.7, 1.0, (n, 1, 1)) + rng.uniform(0, 0.25, images.shape)
    return (np.clip(images, 0, 1) * 255).astype(np.uint8), labels.astype(np.uint8)


def _write_idx(path: str, array: np.ndarray, magic: int) -> None:
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def write_mnist(home: str, rng: np.random.RandomState, n_train=6000, n_test=1000) -> None:
    d = os.path.join(home, "mnist")
    os.makedirs(d, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images, labels = digit_images(n, rng, f"mnist {prefix} images")
        _write_idx(os.path.join(d, f"{prefix}-images-idx3-ubyte.gz"), images, 2051)
        _write_idx(os.path.join(d, f"{prefix}-labels-idx1-ubyte.gz"), labels, 2049)


def write_uci_housing(home: str, rng: np.random.RandomState, n=506) -> None:
    d = os.path.join(home, "uci_housing")
    os.makedirs(d, exist_ok=True)
    features = rng.uniform(0, 1, (n, 13)) * rng.uniform(1, 100, 13)
    weights = rng.uniform(-1, 1, 13) / features.std(0)
    price = 22.0 + features @ weights * 3.0 + rng.normal(0, 1.0, n)
    data = np.concatenate([features, price[:, None]], 1)
    with open(os.path.join(d, "housing.data"), "w") as f:
        for row in data:
            f.write(" ".join(f"{v:.5f}" for v in row) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=os.path.expanduser("~/.cache/paddle/dataset"))
    parser.add_argument("--force", action="store_true", help="overwrite files that are there")
    args = parser.parse_args(argv)
    rng = np.random.RandomState(1234)
    for name, write in (("mnist", write_mnist), ("uci_housing", write_uci_housing)):
        target = os.path.join(args.home, name)
        if os.path.isdir(target) and os.listdir(target) and not args.force:
            print(f"{target} exists; left as it is (--force to overwrite)")
            continue
        write(args.home, rng)
        print(f"wrote generated {name} to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
