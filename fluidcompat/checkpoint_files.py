"""Checkpoint files that are whole or refused: how ``fluid.io`` / ``fluid.save`` / ``save_dygraph`` /
``paddle.save`` write their files and how the loads read them back.

NOTE: [Checkpoint manifest]
A save writes every file of the checkpoint to a temporary file in its own folder (``.tmp-<pid>-<name>-
<random>``, created with mode 0666 so that the umask gives the mode, as ``open`` and fluid did), fsyncs
it, and only then makes them visible: when it writes two files or more (one file per variable,
``fluid.save``'s ``.pdparams`` / ``.pdopt`` / ``.pdmodel``, an inference model), it first replaces the
folder's manifest ``.fluidcompat_manifest`` (the SHA-256 of each file's new contents, and the files of
earlier saves in that folder still listed), then renames the files over the old ones, then fsyncs the
folder. A save killed before the manifest's rename leaves the old checkpoint untouched; one killed
after it leaves files that do not all match the manifest, and a load that reads such a file refuses
with :class:`CheckpointError` naming it. A load reads each file once, parses it and checks it against the
manifest before it changes anything, so a checkpoint loads as one save or not at all.

A folder without a manifest (fluid 1.8.5's checkpoints, files copied by hand) loads as before, and a
file the manifest does not list is not checked. A single-file save (``save_vars(filename=...)``,
``save_dygraph``, ``paddle.save``) is whole by its rename alone; it updates the folder's manifest only
when the folder has one. The manifest is itself a fluid tensor file (uint8, the JSON text), so fluid
1.8.5's ``load_program_state`` of the folder, which reads every file in it as a variable, still
loads. The next save into a folder removes the temporary files a killed save left there (those of
processes that no longer run).

Floor 2: imports the file formats (``proto``) and the standard library.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import threading
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from fluidcompat import proto

__all__ = ["MANIFEST", "CheckpointError", "Reader", "commit", "load_file", "write_file"]

MANIFEST = ".fluidcompat_manifest"
_TMP = ".tmp-"
_FORMAT = "fluidcompat checkpoint manifest"
_LOCK = threading.RLock()  # one commit at a time in this process (the sweep removes this pid's files)


class CheckpointError(ValueError):
    """A checkpoint file does not belong to the checkpoint its folder's manifest describes."""


def _key(rel: str) -> str:
    return os.path.normpath(rel).replace(os.sep, "/")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # a file system that cannot sync a folder
        pass
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(directory: str) -> None:
    """Remove the temporary files of saves that died (their process is gone) and this process's own."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(_TMP):
            continue
        pid = name[len(_TMP) :].partition("-")[0]
        if not pid.isdigit() or (int(pid) != os.getpid() and _alive(int(pid))):
            continue
        try:
            os.remove(os.path.join(directory, name))
        except (FileNotFoundError, IsADirectoryError, PermissionError):
            pass


def _write_tmp(directory: str, base: str, data: bytes) -> str:
    """``data`` in a new temporary file next to ``directory/base``, synced; returns its path."""
    while True:
        path = os.path.join(directory, f"{_TMP}{os.getpid()}-{base}-{secrets.token_hex(4)}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _remove(path)
        raise
    return path


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _manifest_bytes(entries: Dict[str, Optional[str]]) -> bytes:
    text = json.dumps({"format": _FORMAT, "version": 1, "files": entries}, sort_keys=True, indent=0).encode()
    return proto.tensor_to_bytes(np.frombuffer(text, dtype=np.uint8))


def _parse_manifest(data: bytes, path: str) -> Dict[str, Optional[str]]:
    try:
        array, _ = proto.read_tensor(io.BytesIO(data), path)
        doc = json.loads(array.tobytes().decode())
        if doc.get("format") != _FORMAT or not isinstance(doc.get("files"), dict):
            raise ValueError("not a fluidcompat manifest")
        return {str(k): (None if v is None else str(v)) for k, v in doc["files"].items()}
    except (ValueError, AttributeError, UnicodeDecodeError) as e:
        raise CheckpointError(
            f"{path}: the checkpoint manifest is damaged ({e}). Delete it to load the folder's files unchecked."
        ) from None


def _read_manifest(directory: str) -> Optional[Dict[str, Optional[str]]]:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    return _parse_manifest(data, path)


def commit(directory: str, files: Dict[str, Optional[bytes]], manifest: Optional[bool] = None) -> None:
    """Write ``files`` (paths relative to ``directory`` -> contents; None: the file is no longer part
    of the checkpoint, left on disk but refused by a load) as one checkpoint (NOTE: [Checkpoint
    manifest]). ``manifest``: True writes one always, None when two files or more are written or the
    folder has one already, False never."""
    directory = directory or "."
    written = {_key(rel): data for rel, data in files.items() if data is not None}
    with _LOCK:
        os.makedirs(directory, exist_ok=True)
        folders = sorted({os.path.dirname(os.path.join(directory, rel)) for rel in written} | {directory})
        for folder in folders:
            os.makedirs(folder, exist_ok=True)
            _sweep(folder)
        pending: List[tuple] = []
        try:
            for rel, data in written.items():
                final = os.path.join(directory, rel)
                pending.append((_write_tmp(os.path.dirname(final), os.path.basename(final), data), final))
            try:
                old = _read_manifest(directory)
            except CheckpointError:
                old = {}  # a damaged manifest is replaced; the files it listed are no longer checked
            if manifest or (manifest is None and (old is not None or len(written) > 1)):
                entries = dict(old or {})
                entries.update({_key(rel): None for rel, data in files.items() if data is None})
                entries.update({rel: _digest(data) for rel, data in written.items()})
                tmp = _write_tmp(directory, MANIFEST, _manifest_bytes(entries))
                try:
                    os.replace(tmp, os.path.join(directory, MANIFEST))
                except BaseException:
                    _remove(tmp)
                    raise
                _fsync_dir(directory)
            while pending:
                tmp, final = pending[0]
                os.replace(tmp, final)
                pending.pop(0)
            for folder in folders:
                _fsync_dir(folder)
        finally:
            for tmp, _ in pending:
                _remove(tmp)


def write_file(path: str, data: bytes) -> None:
    """Write one file whole (temporary file, fsync, rename); the folder's manifest, if it has one,
    lists the new contents."""
    commit(os.path.dirname(path), {os.path.basename(path): data})


class Reader:
    """Reads the files of a checkpoint folder, each checked against the folder's manifest."""

    def __init__(self, directory: str) -> None:
        self.directory = directory or "."
        self.manifest_path = os.path.join(self.directory, MANIFEST)
        self.entries = _read_manifest(self.directory)

    def excluded(self, rel: str) -> bool:
        """Whether the last save in the folder left ``rel`` out of the checkpoint (a stale file)."""
        return self.entries is not None and _key(rel) in self.entries and self.entries[_key(rel)] is None

    def missing(self) -> List[str]:
        """The files the manifest lists that are not there (a save was interrupted)."""
        if self.entries is None:
            return []
        return sorted(
            os.path.join(self.directory, rel)
            for rel, digest in self.entries.items()
            if digest is not None and not os.path.isfile(os.path.join(self.directory, rel))
        )

    def check(self, rel: str, data: bytes) -> None:
        if self.entries is None or _key(rel) not in self.entries:
            return
        path = os.path.join(self.directory, rel)
        want = self.entries[_key(rel)]
        if want is None:
            raise CheckpointError(
                f"{path} is not part of the checkpoint: the last save in {self.directory} left it out "
                f"(see {self.manifest_path})"
            )
        if _digest(data) != want:
            raise CheckpointError(
                f"{path} does not match the checkpoint's manifest {self.manifest_path}: the checkpoint holds "
                "files of two different saves (a save was interrupted) or the file was changed after it was "
                f"saved. Save it again, or delete {self.manifest_path} to load the files as they are."
            )

    def load(self, rel: str, parse: Callable[[bytes], Any]) -> Any:
        """``parse`` of the contents of ``rel``, read once; then checked against the manifest (a file
        that does not parse raises ``parse``'s own error, which says more than a mismatch)."""
        with open(os.path.join(self.directory, rel), "rb") as f:
            data = f.read()
        value = parse(data)
        self.check(rel, data)
        return value


def load_file(path: str, parse: Callable[[bytes], Any]) -> Any:
    """``parse`` of the contents of the file ``path``, checked against its folder's manifest."""
    return Reader(os.path.dirname(path)).load(os.path.basename(path), parse)
