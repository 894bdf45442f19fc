"""The probe's breaks outside retrieval: each input that used to run away, trace back or be
read silently wrong now gives one line that names the file or the setting."""

from __future__ import annotations

import io
import zipfile

from documents import manual_docx

from chunkeval.corpus import load_corpus


def test_a_word_file_is_bounded_before_it_is_decompressed(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "small.docx").write_bytes(manual_docx())
    # a valid Word file with 3 MB of a part that deflates to a few kilobytes
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(manual_docx())) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("word/media/filler.bin", b"\0" * 3_000_000)
    assert len(buf.getvalue()) < 100_000
    with zipfile.ZipFile(buf) as check:
        size = sum(i.file_size for i in check.infolist())
    (root / "bomb.docx").write_bytes(buf.getvalue())
    corpus = load_corpus(str(root), use_cache=False, max_document_mb=1)
    assert [d.id for d in corpus.documents] == ["small.docx"]
    assert [str(p) for p in corpus.problems] == [
        f"{root}/bomb.docx: decompresses to {size / 1e6:.1f} MB, over the 1.0 MB limit on a document; "
        "skipped (raise the limit with --max-document-mb)"]
