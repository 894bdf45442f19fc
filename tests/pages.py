"""A small generated corpus for tests that run chunkeval as a project would: HTML pages of
three titled sections each, with a table and a code block, in plain English words."""

import html
import random

ADJ = ("amber basalt cobalt dusky ember frosty granite hazel indigo jade khaki lunar maroon "
       "nickel ochre pewter quartz russet sable teal umber velvet willow xenon").split()
NOUN = ("anchor beacon canal delta engine falcon glacier harbor island jetty kettle lantern "
        "meadow nectar orchard pylon quarry rudder signal tunnel").split()
FILLER = ("the a of and to in for with on by from at is was are be this that it as or system "
          "value file list page data mode step rule path user note part item form").split()


def _sentence(rng: random.Random, keys: list[str], n: int = 12) -> str:
    words = [rng.choice(FILLER) for _ in range(n)]
    for k in keys:
        words.insert(rng.randrange(len(words) + 1), k)
    return " ".join(words).capitalize() + "."


def corpus_pages(n_docs: int = 40, seed: int = 7) -> dict[str, str]:
    """Pages of three sections each, titled by a unique word pair the section's prose repeats,
    so every title is a section-titles query (120 in all) a retriever can answer."""
    rng = random.Random(seed)
    pairs = [(a, b) for a in ADJ for b in NOUN]
    rng.shuffle(pairs)
    pages = {}
    for d in range(n_docs):
        body = [f"<h1>Manual page {d}</h1>", f"<p>{_sentence(rng, [], 10)}</p>"]
        for s in range(3):
            a, b = pairs[d * 3 + s]
            tag = "h3" if s == 2 else "h2"
            body.append(f"<{tag}>{a.capitalize()} {b}</{tag}>")
            for _ in range(2):
                body.append("<p>" + " ".join(_sentence(rng, [a, b]) for _ in range(3)) + "</p>")
            if s == 0:
                rows = "".join(f"<tr><td>{a}-{r}</td><td>"
                               f"{' '.join(rng.choice(FILLER) for _ in range(8))}</td></tr>"
                               for r in range(6))
                body.append(f"<table><tr><th>key</th><th>meaning</th></tr>{rows}</table>")
            if s == 1:
                code = "\n".join(f"{b}_{i} = {rng.randrange(1000)}  # {rng.choice(FILLER)}"
                                 for i in range(5))
                body.append(f"<pre>{html.escape(code)}</pre>")
        pages[f"page{d:02d}.html"] = (
            f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Manual page {d}</title>"
            "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    return pages
