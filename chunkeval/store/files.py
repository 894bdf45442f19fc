"""The cache root, atomic writes (a crash leaves the old file intact), a run's outputs
written together, and the size bounds every cache shares."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from pathlib import Path

from ..errors import ConfigError, OutputError

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


def safe_name(part: str) -> str:
    """`part` as one folder name."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", part) or "_"


def embeddings_root() -> Path:
    """Where the embedding cache keeps its vectors (retrieval/embedding.py)."""
    return cache_root() / "embeddings"


def atomic_write(path: str | os.PathLike, data: str | bytes,
                 stale_after: float = STALE_TEMP_SECONDS) -> Path:
    """Write to a temporary file beside `path`, fsync, then rename it into place. Temporary
    files of killed writes to `path` older than `stale_after` seconds are removed first (0:
    all of them, for a writer that holds a lock no other writer of `path` can pass)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path, stale_after)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        _fill(fd, raw)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename is None and e.errno is not None:
            # a full disk says nothing of where: the message names the file
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise
    return path


def _fill(fd: int, raw: bytes) -> None:
    """Write `raw` to the new file open as `fd`, give it the mode a plain open() would have
    (a temporary file is made private) and fsync it; the file is closed."""
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())


def remove_stale_temps(path: Path, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove the temporaries of killed writes to `path` (`.NAME.*.tmp` beside it): files of
    atomic_write, directories of write_together."""
    removed = []
    now = time.time()
    for tmp in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
        try:
            if older_than <= 0 or now - tmp.lstat().st_mtime > older_than:
                if tmp.is_dir() and not tmp.is_symlink():
                    shutil.rmtree(tmp)
                else:
                    tmp.unlink()
                removed.append(tmp)
        except OSError:
            pass  # gone already, or not ours to remove
    return removed


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def limit_from_env(var: str, default_mb: float) -> int:
    """A cache's size bound in bytes: $var in MB, else the default."""
    raw = os.environ.get(var, "")
    try:
        return int(float(raw) * 2**20) if raw else int(default_mb * 2**20)
    except ValueError:
        raise ConfigError(f"${var}={raw!r}: expected a size in MB") from None


def files_by_age(root: Path, pattern: str) -> list[tuple[float, Path, int]]:
    """(mtime, path, size) of the files under `root` matching `pattern`; vanished ones skipped."""
    out = []
    for f in root.glob(pattern) if root.is_dir() else []:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((st.st_mtime, f, st.st_size))
    return out


def prune_oldest(entries: list[tuple[float, Path, int]], limit: int) -> int:
    """Delete the least recently used of `entries` until they hold at most `limit` bytes;
    the count deleted. A reader holding a deleted file open still reads it whole."""
    total = sum(size for _, _, size in entries)
    removed = 0
    for _, f, size in sorted(entries):
        if total <= limit:
            break
        try:
            f.unlink()
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


# -- a run's outputs, written together -----------------------------------------------------------
# Beside the files a set holds, a manifest of them (name -> sha256), renamed into place after
# them. While the files are renamed one by one the manifest says so ("writing"), so a run
# killed between two renames leaves a folder that readers refuse (outputs_file) instead of a
# new results.json read beside old reports; the hashes let anyone check a copied set.
MANIFEST = "chunkeval-manifest.json"


def write_together(out_dir: str | os.PathLike, files: dict[str, str | bytes]) -> dict[str, Path]:
    """Write `files` (name -> content) into the directory `out_dir` together: each into a
    temporary directory beside it first, the one step that needs space, then renamed into
    place, which needs none, and the manifest last. So a full disk or a failed write leaves
    every old file as it was, and the error names the directory and the space the files need;
    a kill between two renames leaves a manifest that says the set is not whole.

    A temporary directory of a killed run (`.NAME.*.tmp` beside it) is removed by the next."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    raws = {name: data.encode("utf-8") if isinstance(data, str) else data
            for name, data in files.items()}
    # the files other sets wrote here (a sweep beside a run) stay listed
    listed = {name: digest for name, digest in _listed(out).items() if name not in raws}
    listed |= {name: hashlib.sha256(raw).hexdigest() for name, raw in raws.items()}
    manifest = json.dumps({"files": dict(sorted(listed.items()))}, indent=1) + "\n"
    remove_stale_temps(out)
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        for name, raw in [*raws.items(), (MANIFEST, manifest.encode("utf-8"))]:
            _fill(os.open(tmp / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), raw)
        out.mkdir(exist_ok=True)
        atomic_write(out / MANIFEST, json.dumps({"writing": True}) + "\n")
        for name in raws:
            os.replace(tmp / name, out / name)
        os.replace(tmp / MANIFEST, out / MANIFEST)
    except OSError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp = None
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            need = sum(len(r) for r in raws.values())
            try:
                free = f"{shutil.disk_usage(out.parent).free / 2**20:,.1f} MB free"
            except OSError:
                free = "free space unknown"
            raise OutputError(f"{out}: no space left on the device for the outputs: they need "
                              f"{need / 2**20:,.1f} MB ({free}); the previous outputs are "
                              "kept as they were") from None
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {name: out / name for name in raws}


def _listed(out: Path) -> dict[str, str]:
    """The files the manifest in `out` lists (none when it is missing, unreadable or says a
    write was cut short)."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        files = data["files"]
        return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def outputs_file(path: str | os.PathLike) -> bytes:
    """The bytes of one file of a set write_together wrote; OutputError naming the folder
    when its manifest says a run stopped (or is running) between the set's renames. A folder
    without a manifest (written before there was one, or by hand) is read as it is, and so is
    a file edited after its set was written."""
    path = Path(path)
    data = path.read_bytes()
    try:
        manifest = json.loads((path.parent / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return data
    except (OSError, ValueError) as e:
        raise OutputError(f"{path.parent}: its {MANIFEST} cannot be read ({e}); run again to "
                          "write these outputs whole") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise OutputError(f"{path.parent}: a run stopped (or is running) while it replaced "
                          "these outputs, so they may be from two runs; run it again")
    return data


# -- what a run says of its caches ----------------------------------------------------------------

class CacheNotice(UserWarning):
    """What a run says of its caches (one cannot be written, an entry was not what its key
    says, a retriever computes other vectors than kept): the run goes on."""


SAID: set[str] = set()  # the notices this process has given


def notice(line: str) -> None:
    """Say `line` once per process. A warning, so that the command line prints it as one
    line and pytest lists it in its summary."""
    if line not in SAID:
        SAID.add(line)
        warnings.warn(CacheNotice(line), stacklevel=3)


def cannot_write(error: OSError) -> None:
    """Say once per process that the cache cannot be written (full, read-only, not a folder):
    the run goes on, and the next one does the work again."""
    root = str(cache_root())
    if any(line.startswith(f"the cache {root} cannot be written") for line in SAID):
        return
    why = error.strerror or str(error)
    notice(f"the cache {root} cannot be written ({why}): this run goes on, and the next does "
           f"its work again; free space there or set ${ENV_VAR} to a writable folder")
