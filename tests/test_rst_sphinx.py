"""reStructuredText as a Sphinx build shows it, and warnings one line per kind."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chunkeval.cli import main
from chunkeval.corpus import load_corpus
from chunkeval.corpus.rst import Project, parse_rst
from chunkeval.errors import Problem
from chunkeval.problems import strict_failure, summary


def _parse(text: str, root: Path | None = None, name: str = "page.rst", others=None):
    text = textwrap.dedent(text)
    project = Project.of(root, {name: text, **(others or {})})
    file = root / name if root else None
    doc, problems = parse_rst(text.encode(), name, project=project, file=file)
    return [(b.kind, doc.block_text(b)) for b in doc.blocks], problems


def test_a_captioned_code_block_stays_code_with_its_caption_and_no_option_lines():
    blocks, problems = _parse("""\
        Setup
        =====

        .. code-block:: python
           :caption: settings.py
           :linenos:
           :emphasize-lines: 2

           DEBUG = True
           PORT = 8000

        .. sourcecode:: text
           :dedent: 2

             indented twice
        """)
    assert blocks == [("heading1", "Setup"), ("paragraph", "settings.py"),
                      ("pre", "DEBUG = True\nPORT = 8000"), ("pre", "indented twice")]
    assert problems == []


def test_version_notes_carry_sphinx_labels_and_admonitions_their_titles():
    blocks, _ = _parse("""\
        Changes
        =======

        .. versionadded:: 2.0
           The ``async`` flag.

        .. versionchanged:: 3.1 Reads *files* too.

        .. deprecated:: 4.0

        .. admonition:: Before you start

           Back up the database.

        .. warning:: It deletes rows.
        """)
    assert blocks[1:] == [
        ("paragraph", "Added in version 2.0: The async flag."),
        ("paragraph", "Changed in version 3.1: Reads files too."),
        ("paragraph", "Deprecated since version 4.0."),
        ("paragraph", "Before you start"), ("paragraph", "Back up the database."),
        ("paragraph", "Warning: It deletes rows.")]


def test_roles_read_as_sphinx_shows_them(tmp_path):
    other = "Installing It\n=============\n\n.. _proxies:\n\nUsing Proxies\n-------------\n\nx\n"
    blocks, problems = _parse("""\
        Guide
        =====

        Set :attr:`~pkg.App.config`, call :func:`pkg.run` and :meth:`.Client.get`, see
        :class:`the app <pkg.App>`, :ref:`proxies`, :ref:`ssl`, :doc:`install` and
        :doc:`the FAQ <faq>`; a :issue:`42` and :pep:`8`.
        """, tmp_path, others={"install.rst": other})
    assert blocks[1] == ("paragraph", "Set config, call pkg.run() and Client.get(), see the app, "
                                      "Using Proxies, ssl, Installing It and the FAQ; a 42 and "
                                      "PEP 8.")
    assert problems == []


def test_python_objects_are_their_signature_and_body_autodoc_its_signature():
    blocks, problems = _parse("""\
        API
        ===

        .. module:: shop

        .. class:: Cart(items=None)
           :noindex:

           A basket.

           .. method:: add(item)

              Puts it in.

        .. autofunction:: shop.checkout
           :no-index:

        .. toctree::
           :maxdepth: 2

           api
        """)
    assert blocks[1:] == [("paragraph", "class shop.Cart(items=None)"), ("paragraph", "A basket."),
                          ("paragraph", "add(item)"), ("paragraph", "Puts it in."),
                          ("paragraph", "shop.checkout")]
    assert [(p.kind, p.names) for p in problems] == [("rst-autodoc", ("autofunction",))]


def test_include_and_literalinclude_read_inside_the_folder_only(tmp_path):
    root = tmp_path / "docs"
    (root / "snippets").mkdir(parents=True)
    (root / "snippets" / "part.rst").write_text("Included paragraph about ferries.\n")
    (root / "snippets" / "tool.py").write_text("import os\n\n\ndef main():\n    return 1\n")
    (tmp_path / "SECRET.txt").write_text("outsideword\n")
    blocks, problems = _parse("""\
        Guide
        =====

        .. include:: snippets/part.rst

        .. literalinclude:: snippets/tool.py
           :pyobject: main
           :caption: The tool

        .. include:: ../SECRET.txt

        .. literalinclude:: /../SECRET.txt

        Last paragraph.
        """, root)
    assert blocks[1:] == [("paragraph", "Included paragraph about ferries."),
                          ("paragraph", "The tool"), ("pre", "def main():\n    return 1"),
                          ("paragraph", "Last paragraph.")]
    assert all("outsideword" not in text for _, text in blocks)
    assert [(p.kind, p.line) for p in problems] == [("include-outside", 10),
                                                    ("include-outside", 12)]
    assert "outside the corpus folder; skipped, nothing read" in problems[0].message


def test_a_malformed_table_names_its_line_and_the_rest_is_kept():
    blocks, problems = _parse("""\
        Tables
        ======

        Before.

        +-----+-----+
        | a   | b   |
        +-----+--
        | c   | d   |
        +-----+-----+

        After the table.

        Later
        -----

        Still here.
        """)
    assert ("paragraph", "After the table.") in blocks and ("paragraph", "Still here.") in blocks
    assert [(p.kind, p.line) for p in problems] == [("rst-error", 8)]
    assert str(problems[0]).startswith("page.rst:8: reStructuredText error")


def test_version_comes_from_a_plain_string_in_conf_py_else_reads_as_nothing(tmp_path):
    text = "Intro\n=====\n\nThis is release |release| (|version|).\n"
    (tmp_path / "conf.py").write_text("release = '2.4.1'\nversion = get_version()\n")
    blocks, problems = _parse(text, tmp_path)
    assert blocks[1] == ("paragraph", "This is release 2.4.1 ().")
    assert [(p.kind, p.names) for p in problems] == [("rst-conf-value", ("version",))]


def test_warnings_are_one_line_per_kind_with_a_count_and_three_files(tmp_path, capsys):
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(5):
        (root / f"api{n}.rst").write_text(f"API {n}\n=====\n\n.. autoclass:: pkg.C{n}\n"
                                          ".. autofunction:: pkg.f\n\nText.\n")
    (root / "notes.rst").write_text("Just a paragraph, no title.\n")
    assert main(["corpus", "info", "--corpus", str(root), "--strict"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(err) == 2
    assert "5 files use autodoc directives" in err[0] and "autoclass (5), autofunction (5)" \
        in err[0] and err[0].count("api") == 3
    assert "notes.rst: no sections" in err[1]
    # one problem that changes the text: now strict fails and says why
    (root / "bad.rst").write_text("Bad\n===\n\n.. include:: /../../elsewhere.rst\n")
    assert main(["corpus", "info", "--corpus", str(root), "--strict", "--json"]) == 1
    captured = capsys.readouterr()
    assert "strict: 1 problem(s) in the input change what is measured (include files from " \
           "outside the corpus folder)" in captured.err
    import json
    info = json.loads(captured.out)
    assert len(info["problems"]) == 7 and len(info["warnings"]) == 3


def test_a_problem_without_a_kind_fails_strict_one_describing_the_input_does_not():
    same = [Problem(f"p{n}.html", "no headings (h1-h6)") for n in range(4)]
    assert summary(same) == ["4 files: no headings (h1-h6); e.g. p0.html, p1.html, p2.html, …"]
    assert strict_failure(same).startswith("strict: 4 problem(s)")
    assert strict_failure([Problem("a.rst", "no sections", kind="no-sections")]) is None


@pytest.mark.parametrize("page, other, before, after", [
    (".. include:: part.inc", "part.inc", "First words.\n", "Second words.\n"),
    ("Words |release|.", "conf.py", "release = 'First'\n", "release = 'Second'\n")])
def test_a_changed_include_or_conf_py_is_read_again_not_taken_from_the_cache(
        tmp_path, cache_dir, page, other, before, after):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "index.rst").write_text(f"Home\n====\n\n{page}\n")
    (root / other).write_text(before)
    assert "First" in load_corpus(str(root)).documents[0].text
    (root / other).write_text(after)
    assert "Second" in load_corpus(str(root)).documents[0].text


def test_numbered_items_keep_their_numbers_and_see_also_its_label():
    blocks, _ = _parse("""\
        Steps
        =====

        1. Fork it.
        2. Clone it.

        (a) left
        (b) right

        .. seealso:: The contributing guide.
        """)
    assert blocks[1:] == [("item", "1. Fork it."), ("item", "2. Clone it."),
                          ("item", "(a) left"), ("item", "(b) right"),
                          ("paragraph", "See also: The contributing guide.")]


def test_doctest_blocks_take_their_options_and_hidden_ones_give_no_text():
    blocks, problems = _parse("""\
        Doctests
        ========

        .. doctest::
           :skipif: sys.platform == "win32"
           :no-trim-doctest-flags:

           >>> 1 + 1
           2

        .. testcode:: setup, main
           :hide:

           secret = 1
        """)
    assert blocks[1:] == [("pre", ">>> 1 + 1\n2")] and problems == []


def test_sessions_lose_doctest_flags_and_table_cells_docutils_notes():
    blocks, _ = _parse("""\
        Session
        =======

        >>> print(1)  # doctest: +SKIP
        1

        +------+-------+
        | name | value |
        +======+=======+
        | a    | ---   |
        +------+-------+
        """)
    assert blocks[1:] == [("pre", ">>> print(1)\n1"), ("table", "name | value\na | ---")]


def test_footnotes_keep_their_label():
    blocks, _ = _parse("""\
        Notes
        =====

        Text with a note [#]_.

        .. [#] The note.
        """)
    assert blocks[1:] == [("paragraph", "Text with a note 1."), ("paragraph", "[1] The note.")]


def test_an_inconsistent_title_level_names_its_line_and_the_sections_after_it_stay():
    blocks, problems = _parse("""\
        Top
        ===

        Sub
        ---

        Deep
        ~~~~

        Second
        ======

        Skipped
        ~~~~~~~

        Skipped text.

        More
        ----

        More text.
        """)
    assert ("paragraph", "Skipped text.") in blocks and ("heading2", "More") in blocks
    assert [str(p) for p in problems] == [
        "page.rst:13: reStructuredText error, the rest of the file is kept: Inconsistent "
        "title style: skip from level 1 to 3."]


def test_docutils_own_include_files_are_read_by_bare_name_only(tmp_path):
    blocks, problems = _parse("""\
        Marks
        =====

        .. include:: <isonum.txt>

        .. include:: <../../../../../../../../../etc/hostname>

        Copyright |copy| here.
        """, tmp_path)
    assert blocks[1:] == [("paragraph", "Copyright © here.")]
    assert [(p.kind, p.line) for p in problems] == [("include-outside", 6)]


def test_a_bad_option_value_is_a_problem_at_its_line_and_literalinclude_dedents_last(tmp_path):
    (tmp_path / "tool.py").write_text("    def run():\n        pass\n")
    blocks, problems = _parse("""\
        Options
        =======

        .. code-block:: python
           :dedent: lots

           x = 1

        .. literalinclude:: tool.py
           :prepend:     # the tool
           :dedent: 4

        After.
        """, tmp_path)
    assert blocks[1:] == [("pre", "# the tool\ndef run():\n    pass"), ("paragraph", "After.")]
    assert [(p.kind, p.line) for p in problems] == [("rst-error", 4)]


def test_docutils_loads_with_the_first_file_parsed_not_with_the_reader():
    # The directives and roles live in modules that import docutils at their top: only
    # parse_rst may bring them in, so that commands reading no reStructuredText skip it.
    code = ("import sys\nfrom chunkeval.corpus.rst import parse_rst\n"
            "before = 'docutils' in sys.modules\n"
            "parse_rst(b'Title\\n=====\\n\\n.. note:: Read me.\\n', 'a.rst')\n"
            "print(before, 'docutils' in sys.modules, "
            "'chunkeval.corpus.rst_directives' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "True", "True"]
