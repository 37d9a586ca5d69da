"""paddle.dataset readers keep fluid 1.8's sample formats over files in fluid's cache layout."""

from __future__ import annotations

import io
import os
import pickle
import re
import tarfile

import numpy as np
import pytest

from fluidcompat.dataset import cifar, mnist, synthetic, uci_housing


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / ".cache" / "paddle" / "dataset"


def test_mnist_and_uci_housing_formats(home):
    synthetic.main(["--home", str(home)])
    samples = list(mnist.train()())
    assert len(samples) == 6000 and len(list(mnist.test()())) == 1000
    image, label = samples[0]
    assert image.shape == (784,) and image.dtype == np.float32 and isinstance(label, int)
    assert image.min() >= -1.0 and image.max() <= 1.0 and 0 <= label <= 9
    train, test = list(uci_housing.train()()), list(uci_housing.test()())
    assert (len(train), len(test)) == (404, 102)  # 80/20 of 506 rows
    features = np.array([x for x, _ in train + test])
    raw = np.loadtxt(home / "uci_housing" / "housing.data")
    np.testing.assert_allclose(features, (raw[:, :13] - raw[:, :13].mean(0)) / np.ptp(raw[:, :13], 0), atol=1e-9)
    assert train[0][1].shape == (1,) and train[0][1][0] == raw[0, 13]


def test_missing_files_name_where_to_put_them(home):
    with pytest.raises(FileNotFoundError, match=r"mnist/train-images-idx3-ubyte.gz is missing. fluidcompat does not"):
        mnist.train()
    synthetic.main(["--home", str(home)])
    before = os.path.getmtime(home / "mnist" / "train-images-idx3-ubyte.gz")
    synthetic.main(["--home", str(home)])  # existing data left alone
    assert os.path.getmtime(home / "mnist" / "train-images-idx3-ubyte.gz") == before


def test_cifar10_reads_the_python_tarball(home):
    (home / "cifar").mkdir(parents=True)
    rng = np.random.RandomState(0)
    data = rng.randint(0, 256, (3, 3072)).astype(np.uint8)
    with tarfile.open(home / "cifar" / "cifar-10-python.tar.gz", "w:gz") as tar:
        for name, labels in (
            ("cifar-10-batches-py/data_batch_1", [1, 2, 3]),
            ("cifar-10-batches-py/test_batch", [7, 8, 9]),
        ):
            blob = pickle.dumps({b"data": data, b"labels": labels})
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    got = list(cifar.train10()())
    assert [label for _, label in got] == [1, 2, 3]
    assert got[0][0].dtype == np.float32
    np.testing.assert_allclose(got[0][0], data[0] / 255.0, rtol=1e-6)
    assert [label for _, label in cifar.test10()()] == [7, 8, 9]


def _tar(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            blob = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))


def test_imdb_tokenizes_and_labels_as_fluid(home):
    from fluidcompat.dataset import imdb

    (home / "imdb").mkdir(parents=True)
    good, bad = "Great film, great cast!\n", "Bad. Bad bad film.\r\n"
    _tar(
        home / "imdb" / "aclImdb_v1.tar.gz",
        {"aclImdb/train/pos/1.txt": good, "aclImdb/train/neg/2.txt": bad, "aclImdb/test/pos/3.txt": "great"},
    )
    word_idx = imdb.build_dict(re.compile(r"aclImdb/train/.*\.txt$"), 0)
    # bad x3, great x2, film x2 (ties by the word), cast x1, then <unk>
    assert word_idx == {b"bad": 0, b"film": 1, b"great": 2, b"cast": 3, "<unk>": 4}
    assert list(imdb.train(word_idx)()) == [([2, 1, 2, 3], 0), ([0, 0, 0, 1], 1)]
    assert list(imdb.test(word_idx)()) == [([2], 0)]


def test_imikolov_ngrams_and_sequences(home):
    from fluidcompat.dataset import imikolov

    (home / "imikolov").mkdir(parents=True)
    train = "a b a\nb c\n"
    _tar(
        home / "imikolov" / "simple-examples.tgz",
        {"./simple-examples/data/ptb.train.txt": train, "./simple-examples/data/ptb.valid.txt": "a d\n"},
    )
    word_idx = imikolov.build_dict(min_word_freq=1)
    # <s> x3, <e> x3, a x3, b x2 (d, c once: dropped), then <unk>
    assert word_idx == {"<e>": 0, "<s>": 1, "a": 2, "b": 3, "<unk>": 4}
    assert list(imikolov.train(word_idx, 3)()) == [(1, 2, 3), (2, 3, 2), (3, 2, 0), (1, 3, 4), (3, 4, 0)]
    seqs = list(imikolov.test(word_idx, -1, imikolov.DataType.SEQ)())
    assert seqs == [([1, 2, 4], [2, 4, 0])]
