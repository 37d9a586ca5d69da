"""``paddle.dataset.flowers``: Oxford 102 Flowers samples (image float32[3*224*224], CHW BGR with
the channel means taken off; label int in [0, 101]) from ``~/.cache/paddle/dataset/flowers/``
(``102flowers.tgz``, ``imagelabels.mat``, ``setid.mat``), as fluid 1.8 read them.

As in fluid, the split's images are first pickled into ``102flowers.tgz_batch/<split>/`` (batches
fluid wrote there are read as they are), ``train`` reads the ``tstid`` list and ``test`` the
``trnid`` one (the larger set trains), and the default mappers decode with OpenCV and apply
``image.simple_transform(im, 256, 224, is_train, mean=[103.94, 116.78, 123.68])``."""

from __future__ import annotations

import functools
import pickle
from multiprocessing import cpu_count

from fluidcompat.compat.py3compat import to_text
from fluidcompat.dataset.common import data_file
from fluidcompat.dataset.image import batch_images_from_tar, load_image_bytes, simple_transform
from fluidcompat.dataset.matfile import loadmat
from fluidcompat.reader import map_readers, xmap_readers

__all__ = ["train", "test", "valid"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz"
LABEL_URL = "http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat"
SETID_URL = "http://paddlemodels.bj.bcebos.com/flowers/setid.mat"
TRAIN_FLAG, TEST_FLAG, VALID_FLAG = "tstid", "trnid", "valid"


def default_mapper(is_train, sample):
    img, label = sample
    img = load_image_bytes(img)
    if img is None:
        raise ValueError(f"paddle.dataset.flowers: an image of label {label} could not be decoded")
    img = simple_transform(img, 256, 224, is_train, mean=[103.94, 116.78, 123.68])
    return img.flatten().astype("float32"), label


train_mapper = functools.partial(default_mapper, True)
test_mapper = functools.partial(default_mapper, False)


def reader_creator(
    data_file, label_file, setid_file, dataset_name, mapper, buffered_size=1024, use_xmap=True, cycle=False
):
    labels = loadmat(label_file)["labels"][0]
    sets = loadmat(setid_file)
    if dataset_name not in sets:
        raise KeyError(f"paddle.dataset.flowers: {setid_file} has no list {dataset_name!r} (it has {sorted(sets)})")
    img2label = {"jpg/image_%05d.jpg" % i: labels[i - 1] for i in (int(i) for i in sets[dataset_name][0])}
    file_list = batch_images_from_tar(data_file, dataset_name, img2label)

    def reader():
        while True:
            with open(file_list) as f_list:
                for line in f_list:
                    with open(line.strip(), "rb") as f:
                        batch = to_text(pickle.load(f, encoding="bytes"))
                    for sample, label in zip(batch["data"], batch["label"]):
                        yield sample, int(label) - 1
            if not cycle:
                break

    if use_xmap:
        return xmap_readers(mapper, reader, min(4, cpu_count()), buffered_size)
    return map_readers(mapper, reader)


def _files():
    return (
        data_file("flowers", "102flowers.tgz", DATA_URL),
        data_file("flowers", "imagelabels.mat", LABEL_URL),
        data_file("flowers", "setid.mat", SETID_URL),
    )


def train(mapper=train_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    return reader_creator(*_files(), TRAIN_FLAG, mapper, buffered_size, use_xmap, cycle=cycle)


def test(mapper=test_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    return reader_creator(*_files(), TEST_FLAG, mapper, buffered_size, use_xmap, cycle=cycle)


def valid(mapper=test_mapper, buffered_size=1024, use_xmap=True):
    return reader_creator(*_files(), VALID_FLAG, mapper, buffered_size, use_xmap)


def fetch():
    _files()
