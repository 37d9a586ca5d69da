"""``paddle.dataset.image``: fluid 1.8's image helpers for readers (decode, resize the short side,
crop, flip, HWC -> CHW, subtract a mean) on numpy HWC arrays in OpenCV's BGR order.

Decoding and resizing use OpenCV, as fluid 1.8 did (``pip install opencv-python-headless``, or
``pip install fluidcompat[image]``); without it those two raise an ImportError that says so (fluid
asserted). Cropping, flipping and transposing are numpy alone. The random crop and flip draw from
numpy's global generator in fluid's order, so ``np.random.seed`` gives fluid's crops."""

from __future__ import annotations

import os
import pickle
import tarfile

import numpy as np

__all__ = [
    "load_image_bytes",
    "load_image",
    "resize_short",
    "to_chw",
    "center_crop",
    "random_crop",
    "left_right_flip",
    "simple_transform",
    "load_and_transform",
    "batch_images_from_tar",
]


def _cv2(api: str):
    try:
        import cv2
    except ImportError:
        raise ImportError(
            f"paddle.dataset.image.{api} needs OpenCV, as in fluid 1.8: pip install opencv-python-headless "
            "(or pip install 'fluidcompat[image]')"
        ) from None
    return cv2


def batch_images_from_tar(data_file, dataset_name, img2label, num_per_batch=1024):
    """The images of tar file ``data_file`` named in ``img2label`` (member name -> label), in the
    archive's order, pickled ``num_per_batch`` at a time as ``{'label': [...], 'data': [bytes, ...]}``
    into ``<data_file>_batch/<dataset_name>/batch_<i>``; returns the list file
    ``<data_file>_batch/<dataset_name>.txt`` naming them. Batches already there (fluid's or ours) are
    used as they are."""
    batch_dir = data_file + "_batch"
    out_path = f"{batch_dir}/{dataset_name}"
    meta_file = f"{batch_dir}/{dataset_name}.txt"
    if os.path.exists(out_path):
        return meta_file
    os.makedirs(out_path)
    data, labels, file_id = [], [], 0

    def dump():
        with open(f"{out_path}/batch_{file_id}", "wb") as f:
            pickle.dump({"label": labels, "data": data}, f, protocol=2)

    with tarfile.open(data_file) as tf:
        for member in tf.getmembers():
            if member.name not in img2label:
                continue
            data.append(tf.extractfile(member).read())
            labels.append(img2label[member.name])
            if len(data) == num_per_batch:
                dump()
                file_id, data, labels = file_id + 1, [], []
    if data:
        dump()
    # in batch order (fluid listed the directory, in whatever order the file system gave)
    names = sorted(os.listdir(out_path), key=lambda n: (len(n), n))
    with open(meta_file, "a") as meta:
        for name in names:
            meta.write(os.path.abspath(f"{out_path}/{name}") + "\n")
    return meta_file


def load_image_bytes(bytes, is_color=True):  # noqa: A002 (fluid's parameter name)
    """The image encoded in ``bytes`` (any format OpenCV reads): HWC uint8 BGR, or HW gray when
    ``is_color`` is False; None when OpenCV cannot decode it."""
    cv2 = _cv2("load_image_bytes")
    return cv2.imdecode(np.frombuffer(bytes, dtype=np.uint8), 1 if is_color else 0)


def load_image(file, is_color=True):
    """The image in file ``file``: HWC uint8 BGR, or HW gray when ``is_color`` is False; None when
    OpenCV cannot read it."""
    cv2 = _cv2("load_image")
    return cv2.imread(file, 1 if is_color else 0)


def resize_short(im, size):
    """``im`` (HWC or HW) resized by bicubic interpolation so that its shorter edge is ``size`` (the
    longer one ``size * long // short``)."""
    cv2 = _cv2("resize_short")
    h, w = im.shape[:2]
    if h > w:
        h_new, w_new = size * h // w, size
    else:
        h_new, w_new = size, size * w // h
    return cv2.resize(im, (w_new, h_new), interpolation=cv2.INTER_CUBIC)


def to_chw(im, order=(2, 0, 1)):
    """``im`` transposed by ``order`` (HWC -> CHW by default)."""
    if len(im.shape) != len(order):
        raise ValueError(f"to_chw: the image has {len(im.shape)} axes, order {tuple(order)} names {len(order)}")
    return im.transpose(order)


def _crop(im, h_start, w_start, size, is_color):
    if is_color:
        return im[h_start : h_start + size, w_start : w_start + size, :]
    return im[h_start : h_start + size, w_start : w_start + size]


def center_crop(im, size, is_color=True):
    """The ``size`` x ``size`` window in the middle of ``im`` (HWC, or HW when not ``is_color``)."""
    h, w = im.shape[:2]
    return _crop(im, (h - size) // 2, (w - size) // 2, size, is_color)


def random_crop(im, size, is_color=True):
    """A ``size`` x ``size`` window of ``im`` at a place drawn from numpy's global generator (row
    first, then column)."""
    h, w = im.shape[:2]
    h_start = np.random.randint(0, h - size + 1)
    w_start = np.random.randint(0, w - size + 1)
    return _crop(im, h_start, w_start, size, is_color)


def left_right_flip(im, is_color=True):
    """``im`` mirrored left to right."""
    if len(im.shape) == 3 and is_color:
        return im[:, ::-1, :]
    return im[:, ::-1]


def simple_transform(im, resize_size, crop_size, is_train, is_color=True, mean=None):
    """fluid's reader augmentation: the short side resized to ``resize_size``; for training a random
    ``crop_size`` crop flipped with probability 1/2 (``np.random.randint(2) == 0``), otherwise the
    centre crop; CHW float32; ``mean`` (per channel or per element) subtracted."""
    im = resize_short(im, resize_size)
    if is_train:
        im = random_crop(im, crop_size, is_color=is_color)
        if np.random.randint(2) == 0:
            im = left_right_flip(im, is_color)
    else:
        im = center_crop(im, crop_size, is_color=is_color)
    if len(im.shape) == 3:
        im = to_chw(im)
    im = im.astype("float32")
    if mean is not None:
        mean = np.array(mean, dtype=np.float32)
        if mean.ndim == 1 and is_color:
            mean = mean[:, np.newaxis, np.newaxis]
        elif mean.ndim > 1 and mean.ndim != im.ndim:
            raise ValueError(
                f"simple_transform: a mean of shape {mean.shape} for an image of shape {im.shape} "
                "(give one value per channel, or one per element)"
            )
        im -= mean
    return im


def load_and_transform(filename, resize_size, crop_size, is_train, is_color=True, mean=None):
    """``load_image(filename, is_color)`` then ``simple_transform`` with the rest."""
    im = load_image(filename, is_color)
    if im is None:
        raise ValueError(f"load_and_transform: OpenCV could not read an image from {filename!r}")
    return simple_transform(im, resize_size, crop_size, is_train, is_color, mean)
