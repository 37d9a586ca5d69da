"""``paddle.dataset.movielens``: MovieLens 1M ratings from ``~/.cache/paddle/dataset/movielens/
movielens%2Fml-1m.zip`` (fluid 1.8's cache name), each sample ``[user id, gender, age bucket, job,
movie id, category ids, title word ids, [rating * 2 - 5]]``, split into train and test by seeded
numpy draws as fluid 1.8 split them.

Departure: fluid numbered title words and categories in the iteration order of a Python set, which
changes from one process to the next (string hashing is randomized), so a model trained in one
process read different ids in the next; here they are numbered in sorted order, the same every time.
"""

from __future__ import annotations

import functools
import re
import zipfile

import numpy as np

from fluidcompat.dataset.common import data_file

__all__ = [
    "train",
    "test",
    "get_movie_title_dict",
    "max_movie_id",
    "max_user_id",
    "age_table",
    "movie_categories",
    "max_job_id",
    "user_info",
    "movie_info",
]

age_table = [1, 18, 25, 35, 45, 50, 56]
URL = "https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip"
MD5 = "c4d9eecfca2ab87c1945afe126590906"


class MovieInfo:
    """A movie's id, categories and title."""

    def __init__(self, index, categories, title):
        self.index = int(index)
        self.categories = categories
        self.title = title

    def value(self):
        meta = _meta()
        return [
            self.index,
            [meta.categories[c] for c in self.categories],
            [meta.title_words[w.lower()] for w in self.title.split()],
        ]

    def __str__(self):
        return f"<MovieInfo id({self.index}), title({self.title}), categories({self.categories})>"

    __repr__ = __str__


class UserInfo:
    """A user's id, gender, age bucket (an index into ``age_table``) and job id."""

    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == "M"
        self.age = age_table.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        return [self.index, 0 if self.is_male else 1, self.age, self.job_id]

    def __str__(self):
        gender = "M" if self.is_male else "F"
        return f"<UserInfo id({self.index}), gender({gender}), age({age_table[self.age]}), job({self.job_id})>"

    __repr__ = __str__


class _Meta:
    def __init__(self, path):
        self.path = path
        title = re.compile(r"^(.*)\((\d+)\)$")
        self.movies, self.users = {}, {}
        words, categories = set(), set()
        with zipfile.ZipFile(path) as package:
            for line in _lines(package, "ml-1m/movies.dat"):
                movie_id, name, kinds = line.strip().split("::")
                match = title.match(name)
                if match is None:
                    raise ValueError(
                        f"paddle.dataset.movielens: {path}: movie {movie_id}'s title {name!r} has no (year)"
                    )
                kinds = kinds.split("|")
                categories.update(kinds)
                self.movies[int(movie_id)] = MovieInfo(movie_id, kinds, match.group(1))
                words.update(w.lower() for w in match.group(1).split())
            for line in _lines(package, "ml-1m/users.dat"):
                uid, gender, age, job, _ = line.strip().split("::")
                self.users[int(uid)] = UserInfo(uid, gender, age, job)
        self.title_words = {w: i for i, w in enumerate(sorted(words))}
        self.categories = {c: i for i, c in enumerate(sorted(categories))}


_loaded = {}


def _meta() -> _Meta:
    path = data_file("movielens", "movielens%2Fml-1m.zip", URL)
    if path not in _loaded:
        _loaded[path] = _Meta(path)
    return _loaded[path]


def _lines(package, name):
    with package.open(name) as f:
        for raw in f:
            yield raw.decode("latin")


def __reader__(rand_seed=0, test_ratio=0.1, is_test=False):
    meta = _meta()
    np.random.seed(rand_seed)
    with zipfile.ZipFile(meta.path) as package:
        for line in _lines(package, "ml-1m/ratings.dat"):
            if (np.random.random() < test_ratio) == is_test:
                uid, movie_id, rating, _ = line.strip().split("::")
                usr, mov = meta.users[int(uid)], meta.movies[int(movie_id)]
                yield usr.value() + mov.value() + [[float(rating) * 2 - 5.0]]


def __reader_creator__(**kwargs):
    return lambda: __reader__(**kwargs)


train = functools.partial(__reader_creator__, is_test=False)
test = functools.partial(__reader_creator__, is_test=True)


def get_movie_title_dict():
    return _meta().title_words


def max_movie_id():
    return max(m.index for m in _meta().movies.values())


def max_user_id():
    return max(u.index for u in _meta().users.values())


def max_job_id():
    return max(u.job_id for u in _meta().users.values())


def movie_categories():
    return _meta().categories


def user_info():
    return _meta().users


def movie_info():
    return _meta().movies


def fetch():
    _meta()
