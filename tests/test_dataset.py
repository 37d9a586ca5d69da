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


def test_book_dataset_ids_are_the_same_in_every_process(home):
    """movielens title / category ids and conll05 label ids come out in sorted / file order, so a
    second process (another string-hash seed) reads the same ids; fluid's came from a set's order."""
    import subprocess
    import sys
    import zipfile

    (home / "movielens").mkdir(parents=True)
    with zipfile.ZipFile(home / "movielens" / "movielens%2Fml-1m.zip", "w") as z:
        z.writestr("ml-1m/movies.dat", "1::Zebra Apple Mango (1990)::Drama|Action|Comedy\n2::Kiwi (1991)::Crime\n")
        z.writestr("ml-1m/users.dat", "1::M::18::3::1\n")
        z.writestr("ml-1m/ratings.dat", "1::1::5::0\n1::2::3::1\n")
    (home / "conll05st").mkdir()
    (home / "conll05st" / "conll05st%2FtargetDict.txt").write_text("B-Z\nI-Z\nB-A\nI-A\nO\n")
    code = (
        "from fluidcompat.dataset import movielens, conll05;"
        "print(sorted(movielens.get_movie_title_dict().items()), sorted(movielens.movie_categories().items()),"
        "conll05.load_label_dict(conll05._file(conll05.TRGDICT_URL)))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(runs) == 1
    assert runs.pop().strip() == (
        "[('apple', 0), ('kiwi', 1), ('mango', 2), ('zebra', 3)] "
        "[('Action', 0), ('Comedy', 1), ('Crime', 2), ('Drama', 3)] "
        "{'B-Z': 0, 'I-Z': 1, 'B-A': 2, 'I-A': 3, 'O': 4}"
    )


def test_split_and_cluster_files_reader_round_trip(tmp_path, capsys):
    """common.split writes line_count samples per pickle file (fluid 1.8's wrote pickles to text-mode
    files and failed on Python 3); cluster_files_reader gives each trainer every n-th file."""
    from fluidcompat.dataset import common

    common.split(lambda: iter(range(7)), 3, suffix=str(tmp_path / "part-%02d.pickle"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-00.pickle", "part-01.pickle", "part-02.pickle"]
    pattern = str(tmp_path / "part-*.pickle")
    assert list(common.cluster_files_reader(pattern, 2, 0)()) == [0, 1, 2, 6]
    assert list(common.cluster_files_reader(pattern, 2, 1)()) == [3, 4, 5]
    assert "append file: " + str(tmp_path / "part-01.pickle") in capsys.readouterr().out
    with pytest.raises(ValueError, match="line_count must be at least 1, received 0"):
        common.split(lambda: iter(range(3)), 0)


def test_download_names_fluids_cache_file(home):
    from fluidcompat.dataset import common

    with pytest.raises(FileNotFoundError, match=r"movielens/movielens%2Fml-1m.zip is missing"):
        common.download("https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip", "movielens", "md5")
    (home / "wmt16").mkdir(parents=True)
    (home / "wmt16" / "wmt16.tar.gz").write_bytes(b"x")
    assert common.download("http://h/wmt/x.tgz", "wmt16", "0", save_name="wmt16.tar.gz") == str(
        home / "wmt16" / "wmt16.tar.gz"
    )
    assert common.md5file(str(home / "wmt16" / "wmt16.tar.gz")) == "9dd4e461268c8034f5c8564e155c67a6"


def test_map_style_dataloader_refuses_bad_arguments():
    import fluidcompat as fluid
    from fluidcompat.io import BatchSampler, DataLoader, Dataset

    class Three(Dataset):
        def __getitem__(self, i):
            return (np.array([i], "float32"),)

        def __len__(self):
            return 3

    assert fluid.dataloader.Dataset is Dataset and fluid.dataloader.BatchSampler is BatchSampler
    with pytest.raises(TypeError, match="subclass instance of paddle.io.Dataset. Received: list"):
        DataLoader([1, 2], return_list=True)
    with pytest.raises(ValueError, match="should not be set when batch_sampler is given"):
        DataLoader(Three(), return_list=True, batch_sampler=BatchSampler(Three()), batch_size=2)
    with pytest.raises(ValueError, match="batch_size should be a positive integer, but got 0"):
        BatchSampler(Three(), batch_size=0)
    with pytest.raises(ValueError, match="give either dataset or indices"):
        BatchSampler()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        with pytest.raises(ValueError, match="feed_list should be set when return_list=False"):
            DataLoader(Three())


def _mat_header(order=b"IM"):
    return b"MATLAB 5.0 MAT-file".ljust(124, b" ") + b"\x00\x01" + order


def _mat_matrix(mx_class, name=b"v", dims=(1, 2), data=b"\x01\x00\x02\x00", mi=4):
    import struct

    body = struct.pack("<II", 6, 8) + struct.pack("<II", mx_class, 0)
    body += struct.pack("<II", 5, 4 * len(dims)) + struct.pack("<%di" % len(dims), *dims)
    body += struct.pack("<I", (len(name) << 16) | 1) + name.ljust(4, b"\0")
    body += struct.pack("<II", mi, len(data)) + data + b"\0" * (-len(data) % 8)
    return struct.pack("<II", 14, len(body)) + body


def test_matfile_reads_numeric_matrices_and_names_what_it_refuses(tmp_path):
    """The flowers reader's MAT files are read without scipy: a uint16-stored double matrix reads
    as uint16 (scipy's default); other files and matrix kinds are refused by name."""
    from fluidcompat.dataset import matfile

    path = tmp_path / "ok.mat"
    path.write_bytes(_mat_header() + _mat_matrix(6))
    got = matfile.loadmat(str(path))
    assert list(got) == ["v"] and got["v"].dtype == np.uint16 and got["v"].tolist() == [[1, 2]]
    cases = {
        b"not a mat file": "not a MATLAB level-5 .mat file",
        _mat_header() + _mat_matrix(4, name=b"txt"): "variable 'txt' is a char matrix",
        _mat_header() + _mat_matrix(1, name=b"c"): "variable 'c' is a cell matrix",
        _mat_header() + _mat_matrix(6, dims=(2, 2)): r"variable 'v' has 2 values for dimensions \(2, 2\)",
        _mat_header() + _mat_matrix(6)[:-8]: "runs past the end of the file",
    }
    for blob, message in cases.items():
        path.write_bytes(blob)
        with pytest.raises(ValueError, match=message):
            matfile.loadmat(str(path))


def test_image_helpers_without_opencv_say_what_to_install(monkeypatch):
    """Decoding and resizing need OpenCV (fluid asserted); cropping and flipping do not."""
    import sys

    from fluidcompat.dataset import image

    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r"paddle.dataset.image.resize_short needs OpenCV.*opencv-python-headless"):
        image.resize_short(np.zeros((4, 6, 3), np.uint8), 2)
    with pytest.raises(ImportError, match=r"load_image_bytes needs OpenCV"):
        image.load_image_bytes(b"\x89PNG")
    im = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    np.testing.assert_array_equal(image.left_right_flip(im), im[:, ::-1, :])
    np.testing.assert_array_equal(image.center_crop(im, 2), im[0:2, 1:3, :])
    with pytest.raises(ValueError, match=r"to_chw: the image has 3 axes, order \(1, 0\) names 2"):
        image.to_chw(im, order=(1, 0))
