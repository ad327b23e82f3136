"""Writing files all or nothing: every command that writes files writes them here.

`write_files` stages every new file as a temporary file beside its target (in the target's own
folder, so the move is a rename on one file system) and keeps a hard link to every file it replaces
or removes; only when every file is staged does it move them into place, and when a move fails it
moves the old ones back. A folder that cannot be written, a full disk, a file where a folder must be:
the targets are left exactly as they were, and WriteFailed says, in one line, which path and why.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Mapping

_TAG = f".tfjobgen-{os.getpid()}"


class WriteFailed(Exception):
    """`cannot write PATH: why`, in one line; nothing was changed."""

    def __init__(self, path: str, why: str):
        super().__init__(f"cannot write {path}: {why}")
        self.path = path


def why(err: OSError, path: str = "") -> str:
    """What went wrong with a write, in words that say what would be right."""
    folder = os.path.dirname(path) or "."
    reasons = {
        errno.ENOENT: f"no such folder {folder}: create it first",
        errno.ENOTDIR: "a part of its path is a file, not a folder",
        errno.EISDIR: "a folder of that name is in the way",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EEXIST: "a file of that name is in the way",
    }
    if err.errno == errno.EFBIG:
        return _too_large()
    return reasons.get(err.errno, (err.strerror or str(err)).lower())


def _too_large() -> str:
    """EFBIG: the process's file-size limit (RLIMIT_FSIZE; Python ignores its SIGXFSZ) or, without one, the file
    system's largest file."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return "larger than the file system takes"
    return f"larger than this process may write (its file-size limit, ulimit -f, is {limit} bytes)"


def check(path: str) -> None:
    """WriteFailed now, before any work, when `path` could not be written later: its folder is missing
    or a file, or a folder is in its place."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise WriteFailed(path, "a folder of that name is in the way")
    if not os.path.isdir(folder):
        raise WriteFailed(path, f"{folder} is a file, not a folder" if os.path.lexists(folder)
                          else f"no such folder {folder}: create it first")


def write_file(path: str, data: bytes | str, make_folders: bool = False) -> None:
    """One file, whole or not at all (WriteFailed). A path that is a device or a pipe (/dev/stdout, a
    named pipe) is written into as it is, never replaced by a file."""
    data = data.encode() if isinstance(data, str) else data
    if _special(path):
        try:
            with open(path, "wb") as out:
                out.write(data)
        except OSError as err:
            raise WriteFailed(path, why(err, path)) from None
        return
    write_files({path: data}, make_folders=make_folders)


def _special(path: str) -> str:
    """What `path` is when it is there and neither a regular file nor a folder ('' otherwise)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return ""
    return next((name for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a named pipe"),
                                         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")) if test(mode)),
                "not a regular file")


def write_files(files: Mapping[str, bytes | str | None], make_folders: bool = True, prune_under: str = "") -> None:
    """Write every file (text is UTF-8), or remove it where its content is None: all, or nothing (WriteFailed).

    make_folders: create missing folders (removed again when the write fails). prune_under: after removals,
    remove the folders they left empty, up to (not including) this folder.
    """
    staged: list[tuple[str, str]] = []  # (temporary, target)
    backups: dict[str, str] = {}  # target -> hard link to its old content
    created: list[str] = []
    done: list[tuple[str, str]] = []  # ("wrote" | "removed", target), in the order done
    files = {os.path.realpath(path) if os.path.islink(path) else path: data for path, data in files.items()}
    try:
        for target, data in files.items():
            if _special(target):  # a rename would put a file in place of the device or pipe
                raise WriteFailed(target, f"it is {_special(target)}, not a regular file")
            if data is None:
                if os.path.lexists(target):
                    backups[target] = _backup(target)
                continue
            if make_folders:
                created += _make_folders(os.path.dirname(target) or ".", target)
            if os.path.isdir(target):
                raise WriteFailed(target, "a folder of that name is in the way")
            staged.append((_stage(target, data.encode() if isinstance(data, str) else data), target))
            if os.path.lexists(target):
                backups[target] = _backup(target)
        for temporary, target in staged:
            try:
                os.replace(temporary, target)
            except OSError as err:
                raise WriteFailed(target, why(err, target)) from None
            done.append(("wrote", target))
        for target, data in files.items():
            if data is None and target in backups:
                try:
                    os.unlink(target)
                except OSError as err:
                    raise WriteFailed(target, why(err, target)) from None
                done.append(("removed", target))
    except BaseException:
        _undo(done, backups)
        for temporary, _ in staged:
            _quietly(os.unlink, temporary)
        for backup in backups.values():
            _quietly(os.unlink, backup)
        for folder in reversed(created):
            _quietly(os.rmdir, folder)
        raise
    for backup in backups.values():
        _quietly(os.unlink, backup)
    if prune_under:
        _prune([t for t, d in files.items() if d is None], prune_under)


def _stage(target: str, data: bytes) -> str:
    temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}{_TAG}.new")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as err:  # a folder that takes no new file is named; a missing one is in why()
        folder_refuses = err.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
        raise WriteFailed((os.path.dirname(target) or ".") if folder_refuses else target, why(err, target)) from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        _quietly(os.unlink, temporary)
        raise WriteFailed(target, why(err, target)) from None
    os.close(fd)
    return temporary


def _backup(target: str) -> str:
    """A hard link to the file's present content, beside it, so that a failed write can put it back."""
    backup = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}{_TAG}.old")
    _quietly(os.unlink, backup)
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError as err:
        raise WriteFailed(os.path.dirname(target) or ".", why(err, target)) from None
    return backup


def _make_folders(folder: str, target: str) -> list[str]:
    """Create `folder` and its missing parents; the ones created, outermost first."""
    missing = []
    while folder and not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise WriteFailed(target, f"{folder} is a file, not a folder")
        missing.append(folder)
        folder = os.path.dirname(folder)
    created = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except OSError as err:
            for done in reversed(created):
                _quietly(os.rmdir, done)
            raise WriteFailed(path, why(err, path)) from None
        created.append(path)
    return created


def _undo(done: list[tuple[str, str]], backups: dict[str, str]) -> None:
    for what, target in reversed(done):
        if target in backups:
            _quietly(os.replace, backups.pop(target), target)
        elif what == "wrote":
            _quietly(os.unlink, target)


def _prune(removed: list[str], root: str) -> None:
    root = os.path.abspath(root)
    for folder in sorted({os.path.abspath(os.path.dirname(t)) for t in removed}, key=len, reverse=True):
        while folder.startswith(root + os.sep):
            try:
                os.rmdir(folder)  # only when empty
            except OSError:
                break
            folder = os.path.dirname(folder)


def _quietly(action, *args) -> None:
    try:
        action(*args)
    except OSError:
        pass
