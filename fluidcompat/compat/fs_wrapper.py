"""``paddle.distributed.fs_wrapper``: the file systems fleet's checkpoints go to, as fluid 1.8's:
``LocalFS`` (this machine's) and ``BDFS`` (HDFS through the ``hadoop fs`` command, which must be on
``PATH``; each command gets ``time_out`` ms). A checkpoint is written to the local disk first when
the file system ``need_upload_download()``."""

from __future__ import annotations

import abc
import os
import shutil
import subprocess
from pathlib import PurePosixPath

__all__ = ["FS", "LocalFS", "BDFS"]


class FS(abc.ABC):
    """What fleet's checkpoints ask of a file system."""

    @abc.abstractmethod
    def list_dirs(self, fs_path):
        """The names of the directories in ``fs_path`` ([] when it does not exist)."""

    @abc.abstractmethod
    def ls_dir(self, fs_path):
        """The names in ``fs_path``."""

    @abc.abstractmethod
    def stat(self, fs_path):
        """Whether ``fs_path`` exists."""

    @abc.abstractmethod
    def upload(self, local_path, fs_path):
        pass

    @abc.abstractmethod
    def download(self, fs_path, local_path):
        pass

    @abc.abstractmethod
    def mkdir(self, fs_path):
        pass

    @abc.abstractmethod
    def mv(self, fs_src_path, fs_dst_path):
        pass

    @abc.abstractmethod
    def rmr(self, fs_path):
        pass

    @abc.abstractmethod
    def rm(self, fs_path):
        pass

    @abc.abstractmethod
    def delete(self, fs_path):
        pass

    @abc.abstractmethod
    def need_upload_download(self):
        """Whether files go through a local copy (a remote file system)."""


class LocalFS(FS):
    def list_dirs(self, fs_path):
        if not self.stat(fs_path):
            return []
        return [f for f in os.listdir(fs_path) if os.path.isdir(os.path.join(fs_path, f))]

    def ls_dir(self, fs_path):
        return list(os.listdir(fs_path))

    def stat(self, fs_path):
        return os.path.exists(fs_path)

    def mkdir(self, fs_path):
        if os.path.isfile(fs_path):
            raise ValueError(f"{fs_path} is already a file")
        os.makedirs(fs_path, exist_ok=True)

    def mv(self, fs_src_path, fs_dst_path):
        os.rename(fs_src_path, fs_dst_path)

    def rmr(self, fs_path):
        shutil.rmtree(fs_path)

    def rm(self, fs_path):
        os.remove(fs_path)

    def delete(self, fs_path):
        if not self.stat(fs_path):
            return None
        return self.rm(fs_path) if os.path.isfile(fs_path) else self.rmr(fs_path)

    def upload(self, local_path, fs_path):
        raise NotImplementedError("LocalFS needs no upload (need_upload_download() is False)")

    def download(self, fs_path, local_path):
        raise NotImplementedError("LocalFS needs no download (need_upload_download() is False)")

    def need_upload_download(self):
        return False


class BDFS(FS):
    """HDFS through ``hadoop fs -Dfs.default.name=... -Dhadoop.job.ugi=...``."""

    def __init__(self, hdfs_name, hdfs_ugi, time_out=20 * 60 * 1000, sleep_inter=1000) -> None:
        self._base = ["hadoop", "fs", f"-Dfs.default.name={hdfs_name}", f"-Dhadoop.job.ugi={hdfs_ugi}"]
        self._time_out = time_out
        self._sleep_inter = sleep_inter

    def _run(self, *args) -> subprocess.CompletedProcess:
        cmd = self._base + list(args)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=self._time_out / 1000.0)
        except FileNotFoundError:
            raise FileNotFoundError(
                "BDFS runs `hadoop fs` for each file operation, and no hadoop command is on PATH: install the "
                "Hadoop client, or use LocalFS"
            ) from None
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"`{' '.join(cmd)}` took more than time_out ({self._time_out} ms)") from None

    def _ok(self, *args) -> None:
        done = self._run(*args)
        if done.returncode != 0:
            raise RuntimeError(f"`hadoop fs {' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()}")

    def list_dirs(self, fs_path):
        if not self.stat(fs_path):
            return []
        return self.ls_dir(fs_path)[0]

    def ls_dir(self, fs_path):
        """(directories, files) in ``fs_path``, their names only."""
        dirs, files = [], []
        for line in self._run("-ls", fs_path).stdout.splitlines():
            cols = line.split()
            if len(cols) != 8 or fs_path not in cols[7]:
                continue
            (dirs if cols[0].startswith("d") else files).append(PurePosixPath(cols[7]).name)
        return dirs, files

    def is_dir(self, fs_path):
        return self._run("-test", "-d", fs_path).returncode == 0

    def stat(self, fs_path):
        return self._run("-test", "-e", fs_path).returncode == 0

    def upload(self, local_path, fs_path):
        self._ok("-put", local_path, fs_path)

    def download(self, fs_path, local_path):
        self._ok("-get", fs_path, local_path.rstrip("/") + "/")

    def mkdir(self, fs_path):
        if not self.stat(fs_path):
            self._ok("-mkdir", "-p", fs_path)

    def mv(self, fs_src_path, fs_dst_path):
        self._ok("-mv", fs_src_path, fs_dst_path)

    def rmr(self, fs_path):
        if self.stat(fs_path):
            self._ok("-rm", "-r", fs_path)

    def rm(self, fs_path):
        if self.stat(fs_path):
            self._ok("-rm", fs_path)

    def delete(self, fs_path):
        if not self.stat(fs_path):
            return None
        return self.rmr(fs_path) if self.is_dir(fs_path) else self.rm(fs_path)

    def need_upload_download(self):
        return True
