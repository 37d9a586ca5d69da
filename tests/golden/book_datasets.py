# paddle.dataset's movielens, conll05, wmt14 and wmt16 readers over small archives written here in
# fluid's cache layout (a temporary HOME), and paddle.compat. Ids that fluid numbered in a Python
# set's order (movielens titles and categories, conll05 labels) are printed as the words they stand for.
import gzip
import io
import json
import os
import sys
import tarfile
import tempfile
import zipfile

HOME = tempfile.mkdtemp()
os.environ["HOME"] = HOME
DATA = os.path.join(HOME, ".cache", "paddle", "dataset")

import paddle  # noqa: E402
import paddle.compat as cpt  # noqa: E402
import paddle.dataset.common as common  # noqa: E402


def local(url, module_name, md5sum, save_name=None):
    # what fluid's download returns once the file is in place (its md5 check would refuse stand-ins)
    return os.path.join(DATA, module_name, save_name or url.split("/")[-1])


common.download = local


def put(module, name, blob):
    os.makedirs(os.path.join(DATA, module), exist_ok=True)
    with open(os.path.join(DATA, module, name), "wb") as f:
        f.write(blob)


def tar_blob(files, mode="w:gz"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, blob in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return buf.getvalue()


out = {}

# movielens
movies = [
    "1::Toy Story (1995)::Animation|Children's|Comedy",
    "2::Jumanji (1995)::Adventure|Children's|Fantasy",
    "5::Father of the Bride Part II (1995)::Comedy",
    "7::Sabrina (1995)::Comedy|Romance",
    "10::Heat (1995)::Action|Crime|Thriller",
]
users = ["1::F::1::10::48067", "2::M::56::16::70072", "3::M::25::15::55117", "6::F::50::9::55117"]
ratings = [
    "%d::%d::%d::97830%04d" % (u, m, (u * m) % 5 + 1, i)
    for i, (u, m) in enumerate((u, m) for u in (1, 2, 3, 6) for m in (1, 2, 5, 7, 10) for _ in range(3))
]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("ml-1m/movies.dat", "\n".join(movies) + "\n")
    z.writestr("ml-1m/users.dat", "\n".join(users) + "\n")
    z.writestr("ml-1m/ratings.dat", "\n".join(ratings) + "\n")
put("movielens", "movielens%2Fml-1m.zip", buf.getvalue())

ml = paddle.dataset.movielens
titles = {i: w for w, i in ml.get_movie_title_dict().items()}
kinds = {i: c for c, i in ml.movie_categories().items()}


def readable(sample):
    return sample[:5] + [sorted(kinds[c] for c in sample[5]), [titles[w] for w in sample[6]], sample[7]]


train = list(ml.train()())
test = list(ml.test()())
out["movielens"] = {
    "train": [readable(s) for s in train],
    "test": [readable(s) for s in test],
    "ids": [sorted(titles) == list(range(len(titles))), sorted(kinds) == list(range(len(kinds)))],
    "max": [ml.max_movie_id(), ml.max_user_id(), ml.max_job_id()],
    "info": [str(ml.user_info()[6]), str(ml.movie_info()[5])],
    "age_table": ml.age_table,
    "test_ratio_half": len(list(ml.test(rand_seed=3, test_ratio=0.5)())),
}

# conll05
words = "The\ncat\nsat\non\nthe\nmat\n.\n\nDogs\nbark\nloudly\n\n"
props = (
    "-    (A0*   *\n-    *)     *\n"
    "sat  (V*)   (A1*\non   (AM-LOC*   *\n-    *   *\n-    *)  *)\n-    *   (V*)\n\n"
    "-    (A0*)\nbark (V*)\n-    (AM-MNR*)\n\n"
)
conll_tar = tar_blob(
    {
        "conll05st-release/test.wsj/words/test.wsj.words.gz": gzip.compress(words.encode()),
        "conll05st-release/test.wsj/props/test.wsj.props.gz": gzip.compress(props.encode()),
    }
)
put("conll05st", "conll05st-tests.tar.gz", conll_tar)
put("conll05st", "conll05st%2FwordDict.txt", b"<unk>\nthe\ncat\nsat\non\nmat\n.\ndogs\nbark\nbos\neos\n")
put("conll05st", "conll05st%2FverbDict.txt", b"sit\nsat\nbark\n.\n")
put(
    "conll05st",
    "conll05st%2FtargetDict.txt",
    b"B-A0\nI-A0\nB-A1\nI-A1\nB-V\nI-V\nB-AM-LOC\nI-AM-LOC\nB-AM-MNR\nI-AM-MNR\nO\n",
)
put("conll05st", "conll05st%2Femb", b"\0" * 16)
word_dict, verb_dict, label_dict = paddle.dataset.conll05.get_dict()
labels = {i: w for w, i in label_dict.items()}
samples = list(paddle.dataset.conll05.test()())
out["conll05"] = {
    "samples": [list(s[:8]) + [[labels[i] for i in s[8]]] for s in samples],
    "word_dict": word_dict,
    "verb_dict": verb_dict,
    "labels": sorted(label_dict),
    "label_ids": sorted(label_dict.values()) == list(range(len(label_dict))),
    "pairs": all(label_dict["I-" + t[2:]] == label_dict[t] + 1 for t in label_dict if t.startswith("B-")),
    "O_last": label_dict["O"] == len(label_dict) - 1,
    "emb": os.path.relpath(paddle.dataset.conll05.get_embedding(), DATA),
}

# wmt14
src_dict = "<s>\n<e>\n<unk>\nle\nchat\nnoir\ndort\n"
trg_dict = "<s>\n<e>\n<unk>\nthe\ncat\nblack\nsleeps\n"
pairs = "le chat noir\tthe black cat\nle chat dort\tthe cat sleeps\nmalformed line\nle " + "chat " * 80 + "\tthe cat\n"
put(
    "wmt14",
    "wmt14.tgz",
    tar_blob(
        {
            "wmt14/src.dict": src_dict.encode(),
            "wmt14/trg.dict": trg_dict.encode(),
            "wmt14/train/train": pairs.encode(),
            "wmt14/test/test": b"noir\tblack\n",
            "wmt14/gen/gen": b"le chien\tthe dog\n",
        }
    ),
)
wmt14 = paddle.dataset.wmt14
out["wmt14"] = {
    "train": list(wmt14.train(6)()),
    "test": list(wmt14.test(30)()),
    "gen": list(wmt14.gen(30)()),
    "dict": [sorted(d.items()) for d in wmt14.get_dict(5)],
    "dict_words": [sorted(d.items()) for d in wmt14.get_dict(30, reverse=False)],
}

# wmt16
train16 = "a man sleeps\tein mann schläft\na dog runs\tein hund läuft\na man runs\tein mann läuft\nbad\n"
put(
    "wmt16",
    "wmt16.tar.gz",
    tar_blob(
        {
            "wmt16/train": train16.encode(),
            "wmt16/test": "a cat sleeps\teine katze schläft\n".encode(),
            "wmt16/val": "the man\tder mann\n".encode(),
        }
    ),
)
wmt16 = paddle.dataset.wmt16
got = {
    "train": list(wmt16.train(6, 100)()),
    "test_de": list(wmt16.test(100, 5, src_lang="de")()),
    "val": list(wmt16.validation(100, 100)()),
}
for name in sorted(os.listdir(os.path.join(DATA, "wmt16"))):
    if name.endswith(".dict"):
        with open(os.path.join(DATA, "wmt16", name), "rb") as f:
            got[name] = f.read().decode()
got["get_dict"] = sorted(wmt16.get_dict("en", 6, reverse=True).items())
try:
    wmt16.train(6, 6, src_lang="fr")
except ValueError as e:
    got["bad_lang"] = str(e)
out["wmt16"] = got

# paddle.compat
out["compat"] = [
    cpt.to_text(b"abc"),
    cpt.to_text([b"a", "b", 1]),
    sorted(cpt.to_text({b"x", b"y"})),
    sorted(cpt.to_text({b"k": b"v"}).items()),
    [str(b) for b in cpt.to_bytes(["a", b"b"])],
    [cpt.round(x, d) for x, d in ((2.5, 0), (-2.5, 0), (1.25, 1), (0.0, 0), (-0.0, 0), (7.0, 0))],
    cpt.floor_division(7, 2),
    cpt.floor_division(-7.5, 2),
    cpt.get_exception_message(ValueError("boom")),
    cpt.long_type(3),
]
d = {b"k": b"v"}
cpt.to_text(d, inplace=True)
out["compat_inplace_dict"] = sorted((str(k), str(v)) for k, v in d.items())
out["version"] = [paddle.version.full_version, paddle.version.major, paddle.version.minor, paddle.version.patch]

json.dump(out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
