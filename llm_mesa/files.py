"""New files and folders as any Unix tool makes them (their mode from the umask), written atomically.

Why not ``tempfile``: ``mkstemp`` makes a file 0600 and ``mkdtemp`` a folder 0700 whatever the
umask (they are meant for secrets). Renamed into place, a sweep's parts and manifest, a game's
``--out`` folder and a report stayed unreadable to colleagues and to workers under other accounts,
where ``open`` or ``mkdir`` would have made them 0644 and 0755 under umask 022. Here the file or
folder is created with ``O_EXCL`` under a name no one else has, and the kernel applies the umask as
it does for every other tool (0600 and 0700 under 077); the umask is never read or changed (changing
it to read it would race with the other threads of a sweep). A folder that must stay private whatever
the umask (a lab's run, which holds people's data) asks for it (``private=True``).

What is written never appears half-done: it is filled under its temporary name in the destination's
folder, then renamed over the destination in one step (``replace_atomically``).
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

#: names tried before giving up (each has 64 random bits: a clash is a sign of something else)
ATTEMPTS = 100
#: what the umask is applied to: a file anyone may read and write, a folder anyone may enter
FILE_MODE, FOLDER_MODE, PRIVATE_FOLDER_MODE = 0o666, 0o777, 0o700


def _create[T](folder: str | os.PathLike[str], prefix: str, suffix: str, make: Callable[[Path], T]) -> T:
    """``make(path)`` under the first name of ``folder`` that no file has yet (``make`` creates with ``O_EXCL``)."""
    for _ in range(ATTEMPTS):
        try:
            return make(Path(folder) / f"{prefix}{secrets.token_hex(8)}{suffix}")
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no unused name for a new file after {ATTEMPTS} tries", str(folder))


def new_file(folder: str | os.PathLike[str], prefix: str = ".tmp-", suffix: str = "") -> tuple[int, Path]:
    """A new empty file of a unique name in ``folder``, as the umask makes it: its descriptor (open for
    writing, the caller closes it) and its path (``tempfile.mkstemp`` with an ordinary mode)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    return _create(folder, prefix, suffix, lambda path: (os.open(path, flags, FILE_MODE), path))


def new_folder(folder: str | os.PathLike[str], prefix: str = ".tmp-", *, private: bool = False) -> Path:
    """A new empty folder of a unique name in ``folder``, as the umask makes it, or readable by its owner
    alone whatever the umask (``private``) (``tempfile.mkdtemp`` with an ordinary mode)."""
    def make(path: Path) -> Path:
        os.mkdir(path, PRIVATE_FOLDER_MODE if private else FOLDER_MODE)
        return path

    return _create(folder, prefix, "", make)


def replace_atomically(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """``write(tmp)`` fills a new file beside ``path`` (``new_file``), which is then renamed over ``path``:
    a reader sees the old file or the new one, never half of it. On any failure, an interrupt included,
    the temporary file is removed and ``path`` is as it was."""
    path = Path(path)
    fd, tmp = new_file(path.parent, ".tmp-", path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """``text`` (UTF-8) in ``path``, atomically (``replace_atomically``)."""
    replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


__all__ = ["new_file", "new_folder", "replace_atomically", "write_text_atomic"]
