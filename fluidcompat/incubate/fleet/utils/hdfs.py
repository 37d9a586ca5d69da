"""``fleet.utils.hdfs.HDFSClient``: HDFS through ``HADOOP_HOME/bin/hadoop fs`` (with ``-Dkey=value``
for each of ``configs``), each command retried a few times; the answers as fluid 1.8's client gave
them (a failed query is False or [], logged)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time

__all__ = ["HDFSClient"]

_logger = logging.getLogger(__name__)


class HDFSClient:
    def __init__(self, hadoop_home, configs) -> None:
        self.pre_commands = [os.path.join(str(hadoop_home), "bin", "hadoop"), "fs"]
        self.pre_commands += [f"-D{k}={v}" for k, v in (configs or {}).items()]

    def _run(self, args, retry_times=5):
        cmd = self.pre_commands + list(args)
        code, out, err = 1, "", ""
        for attempt in range(retry_times + 1):
            try:
                done = subprocess.run(cmd, capture_output=True, text=True)
                code, out, err = done.returncode, done.stdout, done.stderr
            except OSError as e:  # no hadoop there
                code, out, err = 127, "", f"{cmd[0]}: {e}"
            _logger.info("Times: %d, Running command: %s. Return code: %d, Msg: %s", attempt, " ".join(cmd), code, err)
            if code == 0 or code == 127:
                break
            time.sleep(3)
        return code, out, err

    def cat(self, hdfs_path=None):
        code, out, _ = self._run(["-cat", hdfs_path], retry_times=1)
        return out.rstrip("\n") if code == 0 else ""

    def is_exist(self, hdfs_path=None) -> bool:
        return self._run(["-test", "-e", hdfs_path], retry_times=1)[0] == 0

    def is_dir(self, hdfs_path=None) -> bool:
        return self.is_exist(hdfs_path) and self._run(["-test", "-d", hdfs_path], retry_times=1)[0] == 0

    def is_file(self, hdfs_path=None) -> bool:
        return self.is_exist(hdfs_path) and self._run(["-test", "-d", hdfs_path], retry_times=1)[0] != 0

    def delete(self, hdfs_path) -> bool:
        if not self.is_exist(hdfs_path):
            return True
        return self._run(["-rmr" if self.is_dir(hdfs_path) else "-rm", hdfs_path])[0] == 0

    def rename(self, hdfs_src_path, hdfs_dst_path, overwrite=False) -> bool:
        if overwrite and self.is_exist(hdfs_dst_path):
            self.delete(hdfs_dst_path)
        return self._run(["-mv", hdfs_src_path, hdfs_dst_path])[0] == 0

    @staticmethod
    def make_local_dirs(local_path) -> None:
        os.makedirs(local_path, exist_ok=True)

    def makedirs(self, hdfs_path) -> bool:
        if self.is_exist(hdfs_path):
            return True
        return self._run(["-mkdir", "-p", hdfs_path])[0] == 0

    def _listing(self, flag, hdfs_path, retry_times):
        if not self.is_exist(hdfs_path):
            return []
        code, out, _ = self._run([flag, hdfs_path], retry_times=retry_times)
        if code:
            _logger.error("HDFS list path: %s failed", hdfs_path)
            return []
        return [re.split(r"\s+", line) for line in out.strip().split("\n") if line]

    def ls(self, hdfs_path) -> list:
        """The paths in ``hdfs_path``."""
        return [cols[7] for cols in self._listing("-ls", hdfs_path, 10) if len(cols) == 8]

    def lsr(self, hdfs_path, excludes=()) -> list:
        """The files under ``hdfs_path``, recursively, but ``excludes``."""
        return [cols[7] for cols in self._listing("-lsr", hdfs_path, 1)
                if len(cols) == 8 and not cols[0].startswith("d") and cols[7] not in excludes]  # fmt: skip

    @staticmethod
    def split_files(files, trainer_id, trainers) -> list:
        """Trainer ``trainer_id``'s contiguous share of ``files`` (the first ones one more)."""
        per, extra = divmod(len(files), trainers)
        start = trainer_id * per + min(trainer_id, extra)
        return files[start : start + per + (1 if trainer_id < extra else 0)]

    def download(self, hdfs_path, local_path, multi_processes=5, overwrite=False, retry_times=5) -> bool:
        """The files under ``hdfs_path`` into ``local_path``."""
        self.make_local_dirs(local_path)
        ok = True
        for path in self.lsr(hdfs_path) or ([hdfs_path] if self.is_file(hdfs_path) else []):
            target = os.path.join(local_path, os.path.basename(path))
            if overwrite and os.path.exists(target):
                os.remove(target)
            ok = self._run(["-get", path, target], retry_times=retry_times)[0] == 0 and ok
        return ok

    def upload(self, hdfs_path, local_path, multi_processes=5, overwrite=False, retry_times=5) -> bool:
        """The file (or the files of the directory) ``local_path`` into ``hdfs_path``."""
        files = [local_path] if os.path.isfile(local_path) else [
            os.path.join(root, f) for root, _, names in os.walk(local_path) for f in names]  # fmt: skip
        ok = True
        for f in files:
            args = ["-put"] + (["-f"] if overwrite else []) + [f, hdfs_path]
            ok = self._run(args, retry_times=retry_times)[0] == 0 and ok
        return ok

    def upload_dir(self, dest_dir, local_dir, overwrite=False) -> bool:
        if overwrite and self.is_exist(dest_dir):
            self.delete(dest_dir)
        return self._run(["-put", local_dir, dest_dir])[0] == 0
