"""``paddle.dataset.conll05``: the CoNLL-2005 semantic role labelling test set (fluid 1.8 trained on
it: the training set is not free) from ``~/.cache/paddle/dataset/conll05st/``, each sample nine id
sequences: words, the predicate's context -2..+2, the predicate, the context mark and the labels.

Departure: fluid numbered the labels (``B-X`` / ``I-X`` pairs, then ``O``) in the iteration order of a
Python set, which changes from one process to the next; here in the order the dictionary file first
names them, the same every time.
"""

from __future__ import annotations

import gzip
import tarfile

from fluidcompat.dataset.common import data_file

__all__ = ["test", "get_dict", "get_embedding"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz"
DATA_MD5 = "387719152ae52d60422c016e92a742fc"
WORDDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt"
WORDDICT_MD5 = "ea7fb7d4c75cc6254716f0177a506baa"
VERBDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt"
VERBDICT_MD5 = "0d2977293bbb6cbefab5b0f97db1e77c"
TRGDICT_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt"
TRGDICT_MD5 = "d8c7f03ceb5fc2e5a0fa7503a4353751"
EMB_URL = "http://paddlemodels.bj.bcebos.com/conll05st%2Femb"
EMB_MD5 = "bf436eb0faa1f6f9103017f8be57cdb7"

UNK_IDX = 0


def _file(url):
    return data_file("conll05st", url.split("/")[-1], url)


def load_label_dict(filename):
    """``B-X`` / ``I-X`` ids in pairs for each tag X of the file (first-named first), then ``O``."""
    tags = {}
    with open(filename) as f:
        for line in f:
            line = line.strip()
            if line.startswith(("B-", "I-")):
                tags.setdefault(line[2:], None)
    d = {}
    for tag in tags:
        d["B-" + tag] = len(d)
        d["I-" + tag] = len(d)
    d["O"] = len(d)
    return d


def load_dict(filename):
    with open(filename) as f:
        return {line.strip(): i for i, line in enumerate(f)}


def _bracket_labels(columns, path):
    """One predicate's column of bracket marks (``(A0*``, ``*``, ``*)``, ``(V*)``) as B- / I- / O."""
    tag, inside, out = "O", False, []
    for mark in columns:
        if mark == "*":
            out.append("I-" + tag if inside else "O")
        elif mark == "*)":
            out.append("I-" + tag)
            inside = False
        elif "(" in mark:
            tag = mark[1 : mark.find("*")]
            out.append("B-" + tag)
            inside = ")" not in mark
        else:
            raise RuntimeError(f"Unexpected label: {mark} (in {path})")
    return out


def corpus_reader(data_path, words_name, props_name):
    """(sentence words, predicate, labels) per predicate of each sentence of the corpus."""

    def reader():
        with tarfile.open(data_path) as tar:
            with (
                gzip.GzipFile(fileobj=tar.extractfile(words_name)) as words,
                gzip.GzipFile(fileobj=tar.extractfile(props_name)) as props,
            ):
                sentence, rows = [], []
                for word, label in zip(words, props):
                    columns = label.decode().strip().split()
                    if columns:
                        sentence.append(word.decode().strip())
                        rows.append(columns)
                        continue
                    if rows:
                        by_column = [[row[i] for row in rows] for i in range(len(rows[0]))]
                        verbs = [x for x in by_column[0] if x != "-"]
                        for i, column in enumerate(by_column[1:]):
                            yield sentence, verbs[i], _bracket_labels(column, props_name)
                    sentence, rows = [], []

    return reader


def reader_creator(corpus_reader, word_dict=None, predicate_dict=None, label_dict=None):
    def reader():
        for sentence, predicate, labels in corpus_reader():
            n = len(sentence)
            verb = labels.index("B-V")
            mark = [0] * len(labels)
            context = []
            for offset, edge in ((-2, "bos"), (-1, "bos"), (0, None), (1, "eos"), (2, "eos")):
                at = verb + offset
                if 0 <= at < len(labels):
                    mark[at] = 1
                    context.append(sentence[at])
                else:
                    context.append(edge)
            word_idx = [word_dict.get(w, UNK_IDX) for w in sentence]
            ctx = [[word_dict.get(w, UNK_IDX)] * n for w in context]
            pred_idx = [predicate_dict.get(predicate)] * n
            label_idx = [label_dict.get(w) for w in labels]
            yield (word_idx, *ctx, pred_idx, mark, label_idx)

    return reader


def get_dict():
    """The word, verb and label dictionaries."""
    return load_dict(_file(WORDDICT_URL)), load_dict(_file(VERBDICT_URL)), load_label_dict(_file(TRGDICT_URL))


def get_embedding():
    """The path of the pretrained word vectors."""
    return _file(EMB_URL)


def test():
    word_dict, verb_dict, label_dict = get_dict()
    reader = corpus_reader(
        _file(DATA_URL),
        words_name="conll05st-release/test.wsj/words/test.wsj.words.gz",
        props_name="conll05st-release/test.wsj/props/test.wsj.props.gz",
    )
    return reader_creator(reader, word_dict, verb_dict, label_dict)


def fetch():
    for url in (WORDDICT_URL, VERBDICT_URL, TRGDICT_URL, EMB_URL, DATA_URL):
        _file(url)
