"""A splitter of this project's own, gated by chunkeval (see [tool.chunkeval] in
pyproject.toml). Edit it freely; `pytest` tells you whether retrieval got worse."""

from chunkeval import Chunk

SIZE = 800  # characters a chunk may hold, tables and code blocks aside
WHOLE = {"table", "pre"}  # blocks never cut: a table or code block is one chunk at most


def split(doc):
    """Pack blocks (paragraphs, list items, tables, code) into chunks of at most SIZE
    characters. A prose block longer than SIZE is cut into pieces of SIZE, at the last space
    before the size where there is one; a table or code block stays whole, however long."""
    chunks, start, end = [], None, None
    for block in doc.blocks:
        if start is not None and block.end - start > SIZE:
            chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
            start = None
        if block.end - block.start > SIZE and block.kind not in WHOLE:
            chunks.extend(_pieces(doc, block.start, block.end))
            continue
        if start is None:
            start = block.start
        end = block.end
    if start is not None:
        chunks.append(Chunk(doc.id, start, end, doc.text[start:end]))
    return chunks


def _pieces(doc, start, end):
    pieces = []
    while start < end:
        stop = min(start + SIZE, end)
        if stop < end:  # break after a space when the piece has one past its middle
            space = doc.text.rfind(" ", start + SIZE // 2, stop)
            stop = space + 1 if space != -1 else stop
        pieces.append(Chunk(doc.id, start, stop, doc.text[start:stop]))
        start = stop
    return pieces


# Promises whole tables and code blocks: chunkeval adds a cut-rate test and checks table rows.
split.keeps_structure = True
