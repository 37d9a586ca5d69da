# paddle.dataset.image's helpers and paddle.dataset.flowers' readers over small stand-in files
# written here in fluid's cache layout (a temporary HOME): PNG images (any format OpenCV decodes
# passes for the .jpg members) and MATLAB level-5 label / split files in both byte orders, plain
# and compressed. Images are printed as shape, sum and a few values.
import io
import json
import os
import struct
import tarfile
import tempfile
import zlib

HOME = tempfile.mkdtemp()
os.environ["HOME"] = HOME
DATA = os.path.join(HOME, ".cache", "paddle", "dataset")

import numpy as np  # noqa: E402
import paddle.dataset.common as common  # noqa: E402
import paddle.dataset.flowers as flowers  # noqa: E402
import paddle.dataset.image as image  # noqa: E402


def local(url, module_name, md5sum, save_name=None):
    # what fluid's download returns once the file is in place (its md5 check would refuse stand-ins)
    return os.path.join(DATA, module_name, save_name or url.split("/")[-1])


common.download = flowers.download = local


def png(img):
    h, w = img.shape[:2]
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    head = struct.pack(">IIBBBBB", w, h, 8, 2 if img.ndim == 3 else 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def element(e, kind, payload, small=True):
    if small and len(payload) <= 4:
        return struct.pack(e + "I", (len(payload) << 16) | kind) + payload.ljust(4, b"\0")
    return struct.pack(e + "II", kind, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def matfile(variables, e="<", compress=False):
    # variables: name -> (mx class, mi type, numpy dtype, 2-d array)
    out = b"MATLAB 5.0 MAT-file, stand-in".ljust(116) + b"\0" * 8 + struct.pack(e + "H", 0x0100)
    out += b"IM" if e == "<" else b"MI"
    for name, (mx, mi, dtype, values) in variables.items():
        body = element(e, 6, struct.pack(e + "II", mx, 0))
        body += element(e, 5, struct.pack(e + "%di" % values.ndim, *values.shape))
        body += element(e, 1, name.encode())
        body += element(e, mi, values.astype(np.dtype(dtype).newbyteorder(e)).tobytes(order="F"))
        matrix = element(e, 14, body, small=False)
        if compress:
            packed = zlib.compress(matrix)
            out += struct.pack(e + "II", 15, len(packed)) + packed
        else:
            out += matrix
    return out


rng = np.random.RandomState(7)
sizes = [
    (30, 50),
    (44, 26),
    (33, 33),
    (20, 61),
    (57, 40),
    (25, 25),
    (48, 36),
    (31, 47),
    (40, 22),
    (36, 58),
    (29, 29),
    (52, 34),
]
pictures = {}
for i, (h, w) in enumerate(sizes, 1):
    img = rng.randint(0, 256, size=(h, w) if i == 6 else (h, w, 3)).astype(np.uint8)
    pictures["jpg/image_%05d.jpg" % i] = png(img)
os.makedirs(os.path.join(DATA, "flowers"))
with tarfile.open(os.path.join(DATA, "flowers", "102flowers.tgz"), "w:gz") as tar:
    for name in list(reversed(sorted(pictures))) + ["jpg/readme.txt"]:
        blob = pictures.get(name, b"not an image")
        info = tarfile.TarInfo(name)
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
labels = np.array([[(i * 7) % 5 + 1 for i in range(1, 13)]], dtype=np.float64)
with open(os.path.join(DATA, "flowers", "imagelabels.mat"), "wb") as f:
    f.write(matfile({"labels": (6, 9, "f8", labels)}, e=">"))
sets = {
    "trnid": (6, 4, "u2", np.array([[4, 6, 10]])),
    "valid": (9, 2, "u1", np.array([[7, 12]])),
    "tstid": (6, 2, "u1", np.array([[1, 2, 3, 5, 8, 9, 11]])),
}
with open(os.path.join(DATA, "flowers", "setid.mat"), "wb") as f:
    f.write(matfile(sets, compress=True))


def summary(img):
    img = np.asarray(img)
    flat = img.reshape(-1)
    picks = [int(k) for k in np.linspace(0, flat.size - 1, 9).astype(int)]
    return [
        list(img.shape),
        str(img.dtype),
        round(float(flat.astype(np.float64).sum()), 3),
        [float(flat[k]) for k in picks],
    ]


out = {}
rgb = rng.randint(0, 256, size=(30, 50, 3)).astype(np.uint8)
im = image.load_image_bytes(png(rgb))
out["decoded"] = summary(im) + [im[0, 0].tolist(), rgb[0, 0].tolist()]
out["decoded_gray"] = summary(image.load_image_bytes(png(rgb), is_color=False))
path = os.path.join(HOME, "picture.png")
with open(path, "wb") as f:
    f.write(png(rgb))
out["load_image"] = summary(image.load_image(path))
out["load_image_gray"] = summary(image.load_image(path, False))
out["load_missing_is_none"] = image.load_image(os.path.join(HOME, "none.png")) is None
out["resize_down"] = summary(image.resize_short(im, 10))
out["resize_up"] = summary(image.resize_short(im.transpose(1, 0, 2).copy(), 64))
out["resize_gray"] = summary(image.resize_short(image.load_image(path, False), 17))
out["to_chw"] = summary(image.to_chw(im))
out["to_chw_order"] = summary(image.to_chw(im, order=(1, 0, 2)))
out["center_crop"] = summary(image.center_crop(im, 21))
out["center_crop_gray"] = summary(image.center_crop(im[:, :, 0], 9, is_color=False))
np.random.seed(3)
out["random_crop"] = [summary(image.random_crop(im, 13)) for _ in range(3)]
out["flip"] = summary(image.left_right_flip(im)) + [image.left_right_flip(im)[0, 0].tolist()]
out["flip_gray"] = summary(image.left_right_flip(im[:, :, 1], is_color=False))
np.random.seed(5)
out["simple_train"] = [summary(image.simple_transform(im, 40, 32, True, mean=[10.0, 20.0, 30.0])) for _ in range(4)]
out["simple_test"] = summary(image.simple_transform(im, 40, 32, False))
out["simple_mean_elements"] = summary(image.simple_transform(im, 40, 32, False, mean=np.full((3, 32, 32), 7.5)))
out["simple_gray"] = summary(image.simple_transform(im[:, :, 2].copy(), 36, 30, False, is_color=False, mean=[4.0]))
np.random.seed(11)
out["load_and_transform"] = summary(image.load_and_transform(path, 34, 28, True, mean=[1.0, 2.0, 3.0]))

# flowers: the readers, a mapper given, the batch files they leave
np.random.seed(0)
out["train_plain"] = [[summary(s), l] for s, l in flowers.train(use_xmap=False)()]
out["test_plain"] = [[summary(s), l] for s, l in flowers.test(use_xmap=False)()]
out["valid_xmap"] = sorted([[summary(s), l] for s, l in flowers.valid()()], key=lambda r: (r[1], r[0][2]))
out["test_xmap"] = sorted([[summary(s), l] for s, l in flowers.test()()], key=lambda r: (r[1], r[0][2]))
out["train_mapper"] = sorted(
    [(len(b), l) for b, l in flowers.train(mapper=lambda s: (s[0], s[1] * 10), use_xmap=False)()]
)
cyc = flowers.test(mapper=lambda s: s[1], use_xmap=False, cycle=True)()
out["test_cycle"] = [next(cyc) for _ in range(7)]
batch_dir = os.path.join(DATA, "flowers", "102flowers.tgz_batch")
out["batch_dir"] = sorted(os.listdir(batch_dir))
out["batch_files"] = {d: sorted(os.listdir(os.path.join(batch_dir, d))) for d in ("tstid", "trnid", "valid")}
with open(os.path.join(batch_dir, "tstid.txt")) as f:
    out["meta_lines"] = [os.path.relpath(line.strip(), DATA) for line in f]

tgz = os.path.join(DATA, "flowers", "102flowers.tgz")
small = {"jpg/image_%05d.jpg" % i: i * 100 for i in (1, 2, 3, 4, 5, 6, 7)}
meta = image.batch_images_from_tar(tgz, "small", small, num_per_batch=3)
out["small_meta"] = os.path.relpath(meta, DATA)
with open(meta) as f:
    lines = [line.strip() for line in f]
out["small_files"] = sorted(os.path.basename(line) for line in lines)
contents = []
for line in lines:
    with open(line, "rb") as f:
        batch = __import__("pickle").load(f)
    contents.append([sorted(batch), batch["label"], [len(d) for d in batch["data"]]])
out["small_batches"] = sorted(contents, key=lambda c: c[1])
out["again_same_meta"] = image.batch_images_from_tar(tgz, "small", {}, num_per_batch=3) == meta
print(json.dumps(out, sort_keys=True))
