"""Reading the files other tools write their questions in: UTF-8 text (a byte that is not is
an InputError naming its line), CSV records, JSON and JSONL, each row with where it was read
(`At`), so that a row that cannot be used is named by its file and line."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import InputError


@dataclass(frozen=True)
class At:
    """Where in an input file something was read: a line, or an item of a JSON file."""

    path: str
    line: int | None = None
    item: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where} {self.item}" if self.item else where


def read_text(path: Path) -> str:
    _check_utf8(path)
    return _opened(path, lambda f: f.read())


def read_lines(path: Path) -> Iterator[str]:
    """The file's lines, line ends kept, read one at a time: a long line is held once."""
    _check_utf8(path)
    with _open(path) as f:
        yield from f


def _open(path: Path):
    # newline="": csv sees a quoted cell's line breaks as written
    return open(path, encoding="utf-8-sig", newline="")  # spreadsheet tools write a BOM


def _opened(path: Path, read):
    try:
        with _open(path) as f:
            return read(f)
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def _check_utf8(path: Path, block: int = 1 << 20) -> None:
    """InputError naming the line of the first byte that is not UTF-8, read in blocks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0  # in the blocks decoded whole (a pending partial character holds none)
    try:
        with open(path, "rb") as f:
            while True:
                data = f.read(block)
                try:
                    decoder.decode(data, final=not data)
                except UnicodeDecodeError as e:
                    line = newlines + e.object.count(b"\n", 0, e.start) + 1
                    raise InputError(str(path), f"not UTF-8 text: byte 0x{e.object[e.start]:02x}"
                                                f" ({e.reason})", line) from None
                if not data:
                    return
                newlines += data.count(b"\n")
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def csv_rows(path: Path, need: tuple[tuple[str, ...], ...]) -> Iterator[tuple[At, dict]]:
    """(where, row) of each data row; `need`: of each tuple of column names, one must be
    there. A row's line is the line it starts on (a quoted cell may span lines)."""
    records = csv_records(path)
    header = next(records, None)
    if header is None:
        raise InputError(str(path), "empty file")
    header = [h.strip() for h in header[1]]
    for names in need:
        if not any(n in header for n in names):
            raise InputError(str(path), f"no column {' or '.join(map(repr, names))} "
                                        f"(the columns: {', '.join(header)})", 1)
    for start, row in records:
        if any(cell.strip() for cell in row):
            yield At(str(path), start), dict(zip(header, row))


_LINE_END = "\r\n"


def csv_records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(first line, cells) of each CSV record (RFC 4180: "," between cells, a quoted cell
    may hold commas, line breaks and doubled quotes). Read here rather than by the csv
    module, which holds a cell as 4 bytes a character: an excerpt of 200 MB took 800 MB.
    A quote that does not end its cell is an error naming the line, not a row swallowing
    the rest."""
    lines = enumerate(read_lines(path), 1)
    for n, line in lines:
        start, cells, pos = n, [], 0
        while True:
            if line.startswith('"', pos):
                pieces, pos = [], pos + 1
                while True:
                    q = line.find('"', pos)
                    if q == -1:  # the cell goes on on the next line
                        pieces.append(line[pos:])
                        n, line = next(lines, (n, None))
                        if line is None:
                            raise InputError(str(path), "not CSV: a quoted cell is not "
                                                        "closed before the end of the file",
                                             start)
                        pos = 0
                        continue
                    pieces.append(line[pos:q])
                    if line.startswith('"', q + 1):
                        pieces.append('"')
                        pos = q + 2
                        continue
                    pos = q + 1
                    break
                cells.append("".join(pieces))
                del pieces
                if pos < len(line) and line[pos] not in "," + _LINE_END:
                    raise InputError(str(path), "not CSV: ',' expected after '\"'", n)
            else:
                end = len(line.rstrip(_LINE_END))
                comma = line.find(",", pos, end)
                stop = comma if comma != -1 else end
                cells.append(line[pos:stop])
                pos = stop
            if pos < len(line) and line[pos] == ",":
                pos += 1
                continue
            break
        yield start, cells
        del line, cells


def read_json(path: Path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"not JSON: {e.msg}", e.lineno) from None


def jsonl_rows(path: Path) -> Iterator[tuple[At, object]]:
    for n, line in enumerate(read_lines(path), 1):
        if line.strip():
            try:
                yield At(str(path), n), json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(str(path), f"not JSON: {e.msg}", n) from None

