"""Small PDF, Word and reStructuredText documents the tests write themselves.

`pdf()` is a minimal PDF writer: text lines in the standard Type 1 fonts (Helvetica,
Helvetica-Bold, Courier: every PDF reader has their metrics, nothing is embedded), ruled
rectangles (what a table finder looks for), an image, and a password-protected variant.
Imported as `from documents import ...`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

FONTS = {"regular": "Helvetica", "bold": "Helvetica-Bold", "mono": "Courier"}
WIDTH, HEIGHT = 612, 792


@dataclass
class Page:
    """What one page shows, top-down coordinates (y from the top, as a reader counts)."""

    lines: list[tuple[float, float, float, str, str]] = field(default_factory=list)
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)
    image: bool = False

    def text(self, x: float, y: float, size: float, words: str, font: str = "regular") -> "Page":
        self.lines.append((x, y, size, font, words))
        return self

    def box(self, x: float, y: float, w: float, h: float) -> "Page":
        self.boxes.append((x, y, w, h))
        return self

    def table(self, x: float, y: float, rows: list[list[str]], col: float = 150,
              row: float = 20, size: float = 10) -> "Page":
        """Ruled cells, each with its text: the rows of a table a finder can see."""
        for r, cells in enumerate(rows):
            for c, cell in enumerate(cells):
                self.box(x + c * col, y + r * row, col, row)
                self.text(x + c * col + 4, y + r * row + row - 6, size, cell,
                          "bold" if r == 0 else "regular")
        return self


def _escape(text: str) -> bytes:
    return (text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            .encode("latin-1"))


def _content(page: Page) -> bytes:
    out = []
    for x, y, w, h in page.boxes:
        out.append(f"{x} {HEIGHT - y - h} {w} {h} re S".encode())
    if page.image:
        out.append(f"q 200 0 0 200 72 {HEIGHT - 300} cm /Im1 Do Q".encode())
    for x, y, size, font, words in page.lines:
        name = "F" + str(list(FONTS).index(font) + 1)
        out.append(b"BT /" + name.encode() + f" {size} Tf {x} {HEIGHT - y} Td (".encode()
                   + _escape(words) + b") Tj ET")
    return b"\n".join(out)


def pdf(pages: list[Page], *, title: str = "", password: bool = False,
        outline: list[tuple[int, str, int, float]] = ()) -> bytes:
    """The bytes of a PDF of these pages. `password`: encrypted with a user password
    (the standard security handler), so that no reader opens it without one. `outline`:
    bookmarks (level from 1, title, page index, y from the page's top), in order."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    tree = add(b"")
    fonts = [add(f"<< /Type /Font /Subtype /Type1 /BaseFont /{name} >>".encode())
             for name in FONTS.values()]
    image = add(b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray "
                b"/BitsPerComponent 8 /Length 4 >>\nstream\n\x00\xff\xff\x00\nendstream")
    font_dict = " ".join(f"/F{i + 1} {n} 0 R" for i, n in enumerate(fonts))
    kids = []
    for page in pages:
        content = _content(page)
        stream = add(f"<< /Length {len(content)} >>\nstream\n".encode() + content
                     + b"\nendstream")
        kids.append(add(f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 {WIDTH} {HEIGHT}] "
                        f"/Resources << /Font << {font_dict} >> /XObject << /Im1 {image} 0 R >> "
                        f">> /Contents {stream} 0 R >>".encode()))
    extra = f" /Outlines {_outline(outline, kids, add, objects)} 0 R" if outline else ""
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R{extra} >>".encode()
    objects[tree - 1] = (f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] "
                         f"/Count {len(kids)} >>").encode()
    info = add(b"<< /Title (" + _escape(title) + b") >>") if title else None
    encrypt = None
    if password:
        # Owner and user keys that no empty password matches: a reader must ask for one.
        o = hashlib.sha256(b"owner").hexdigest()[:64]
        u = hashlib.sha256(b"user").hexdigest()[:64]
        encrypt = add(f"<< /Filter /Standard /V 1 /R 2 /O <{o}> /U <{u}> /P -4 >>".encode())

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    trailer = f"/Size {len(objects) + 1} /Root {catalog} 0 R"
    if info:
        trailer += f" /Info {info} 0 R"
    if encrypt:
        trailer += f" /Encrypt {encrypt} 0 R /ID [<{'ab' * 16}> <{'ab' * 16}>]"
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _outline(entries, kids: list[int], add, objects: list[bytes]) -> int:
    """The outline's objects: a tree of bookmarks, each pointing at (page, y) with /XYZ."""
    root = add(b"")
    ids = [add(b"") for _ in entries]
    parents = []  # for each entry, its parent's object number
    stack: list[tuple[int, int]] = [(0, root)]  # (level, object)
    for (level, _, _, _), n in zip(entries, ids):
        while stack[-1][0] >= level:
            stack.pop()
        parents.append(stack[-1][1])
        stack.append((level, n))
    children: dict[int, list[int]] = {}
    for n, parent in zip(ids, parents):
        children.setdefault(parent, []).append(n)
    for (level, title, page, y), n, parent in zip(entries, ids, parents):
        siblings = children[parent]
        k = siblings.index(n)
        links = "".join([f" /Prev {siblings[k - 1]} 0 R" if k else "",
                         f" /Next {siblings[k + 1]} 0 R" if k + 1 < len(siblings) else "",
                         f" /First {children[n][0]} 0 R /Last {children[n][-1]} 0 R "
                         f"/Count {len(children[n])}" if n in children else ""])
        objects[n - 1] = (b"<< /Title (" + _escape(title) + b")" + f" /Parent {parent} 0 R "
                          f"/Dest [{kids[page]} 0 R /XYZ 72 {HEIGHT - y} null]{links} >>"
                          .encode())
    top = children[root]
    objects[root - 1] = (f"<< /Type /Outlines /First {top[0]} 0 R /Last {top[-1]} 0 R "
                         f"/Count {len(top)} >>").encode()
    return root


def paragraph(page: Page, y: float, lines: list[str], x: float = 72, size: float = 11,
              pitch: float = 14) -> float:
    """Lines of body text from y down; returns the y after the last line."""
    for line in lines:
        page.text(x, y, size, line)
        y += pitch
    return y


def manual_pdf(**kw) -> bytes:
    """A three-page manual: a title, numbered chapters and sections (one a question), body
    paragraphs over a page break, a list, a code sample, a ruled table, and a running
    header and page number on every page."""
    pages = [Page(), Page(), Page()]
    for n, page in enumerate(pages, 1):
        page.text(72, 40, 9, "Field Guide to Lanterns (draft)")
        page.text(300, 760, 9, str(n))
    p1, p2, p3 = pages
    p1.text(72, 100, 24, "Field Guide to Lanterns", "bold")
    p1.text(72, 150, 17, "1 Getting started", "bold")
    y = paragraph(p1, 180, ["Lanterns light the harbor path for every late boat",
                            "that comes home after the beacon has gone dark."])
    y = paragraph(p1, y + 12, ["A second paragraph says that the kettle must be",
                               "warm before the wick is trimmed."])
    p1.text(72, y + 20, 14, "1.1 How do I trim the wick?", "bold")
    y = paragraph(p1, y + 50, ["Trim the wick with the brass scissors and keep",
                               "the glass chimney clean of soot, otherwise the"])
    y = paragraph(p2, 80, ["flame flickers and the orchard stays dark all night."])
    y = paragraph(p2, y + 10, ["- keep a spare wick and a box of"])
    y = paragraph(p2, y, ["dry matches"], x=84)  # an item's second line, under its text
    y = paragraph(p2, y + 10, ["- keep the oil dry"])
    y = paragraph(p2, y + 12, ["A wick sample in code:"])
    for code in ("trim(wick, length=2)", "light(wick)"):
        p2.text(90, y, 10, code, "mono")
        y += 12
    p2.text(72, y + 20, 14, "1.2 Oil grades", "bold")
    p2.table(72, y + 40, [["Grade", "Burns for"], ["paraffin", "nine hours"],
                          ["whale", "seven hours"]])
    p3.text(72, 100, 17, "2 Storage", "bold")
    paragraph(p3, 130, ["Store lanterns upright in the jetty shed, away from the canal."])
    return pdf(pages, **kw)


def manual_docx() -> bytes:
    """A Word manual: a title, headings, paragraphs, a bulleted and a numbered list, and a
    table with a header row and a merged cell."""
    import io

    import docx

    d = docx.Document()
    d.add_heading("Harbor Handbook", 0)
    d.add_heading("Mooring", 1)
    d.add_paragraph("Boats moor at the eastern jetty after the beacon is lit.")
    d.add_paragraph("bring two ropes", style="List Bullet")
    d.add_paragraph("check the tide table", style="List Number")
    d.add_heading("How do I pay the harbor fee?", 2)
    d.add_paragraph("Pay the harbor master in the signal tower before sunset.")
    table = d.add_table(rows=3, cols=2)
    for r, cells in enumerate([["Boat", "Fee"], ["rowing boat", "two coins"],
                               ["ferry", "ferry"]]):
        for c, text in enumerate(cells):
            table.cell(r, c).text = text
    table.cell(2, 0).merge(table.cell(2, 1))
    table.cell(2, 0).text = "ferries pay by agreement"
    d.add_heading("Storms", 1)
    d.add_paragraph("In a storm the canal gates close.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


MANUAL_RST = """\
=================
Quarry Operations
=================

The quarry opens at dawn.

Safety
======

Wear a helmet in the quarry at all times. See :ref:`the rules <rules>` and
:func:`quarry.open`.

.. versionadded:: 2.1
   Helmets are now checked at the gate.

.. toctree::
   :maxdepth: 2

   intro
   install

How do I report a rockfall?
---------------------------

Ring the bell twice::

    ring(bell, times=2)

* call the foreman
* close the pylon road

+-----------+-------------+
| Shift     | Starts      |
+===========+=============+
| morning   | six o'clock |
+-----------+-------------+
| evening   | two o'clock |
+-----------+-------------+

.. note:: The bell is in the tunnel.

Tools
=====

hammer
   Breaks stone.
"""
