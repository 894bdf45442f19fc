"""The cache root and atomic writes: a crash leaves the old file intact."""

from __future__ import annotations

import errno
import os
import tempfile
import time
from pathlib import Path

ENV_VAR = "CHUNKEVAL_CACHE"
# A temporary file this old was left by a write that was killed: no live write takes this
# long, so the next write to the same place removes it.
STALE_TEMP_SECONDS = 3600


def cache_root() -> Path:
    """$CHUNKEVAL_CACHE, else $XDG_CACHE_HOME/chunkeval, else ~/.cache/chunkeval."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "chunkeval"


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write to a temporary file beside `path`, fsync, then rename it into place."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file private; give it the mode a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def remove_stale_temps(path: Path, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove the temporary files of killed writes to `path` (`.NAME.*.tmp` beside it)."""
    removed = []
    now = time.time()
    for tmp in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
        try:
            if now - tmp.lstat().st_mtime > older_than:
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            pass  # gone already, or not ours to remove
    return removed


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)
