"""A Sphinx extension for bench/sphinx_fidelity.py: drops the rendered toctrees (the lists
of other pages' titles) from each page, as chunkeval does, so that the comparison counts
page text, not navigation."""


def _drop(app, doctree, docname):
    from docutils import nodes

    for node in list(doctree.findall(nodes.compound)):
        if "toctree-wrapper" in node.get("classes", ()):
            node.parent.remove(node)


def setup(app):
    app.connect("doctree-resolved", _drop)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
