"""Stem classes of the vocabulary (v4.4's lexical part and sparse vectors): every whole-word piece
(no '##', letters a-z only) joins the class of the other whole-word pieces with the same Snowball
English stem ("terminate", "terminated", "termination" -> "termin"), and a class is counted as one
term, under its smallest id (the canonical piece). Other pieces (word continuations, digits,
punctuation, specials) are their own class.

    canonical = stem_classes(vocab)     # int64, canonical[id] = the class's smallest id

Nothing stems at run time: model/graph/lexical.py --stems writes the table into the graph (a Gather in
front of the lexical part) and into lexembed.json "sparse".canonical (src/embedder/sparse.ts), so
the browser, the edge and Node read the same classes. Measured on the dev set (BM25 0.647): the
sparse vectors with the corpus's idf alone 0.679 -> 0.705, the hybrid's dense vectors 0.673 ->
0.690 with the v4.3 tables merged by class (the hybrid's model card has the figures).

Building the table needs a Snowball stemmer: `snowballstemmer` (pure Python, PyPI and Debian's
python3-snowballstemmer) or PyStemmer; both give the same English stems.
"""
import re

import numpy as np

WHOLE_WORD = re.compile(r"[a-z]+")
ALGORITHM = "english"  # Snowball's Porter2


def english_stemmer():
    """A function word -> stem (Snowball English), from whichever package is installed."""
    try:
        import snowballstemmer
        return snowballstemmer.stemmer(ALGORITHM).stemWord
    except ImportError:
        pass
    try:
        import Stemmer
        return Stemmer.Stemmer(ALGORITHM).stemWord
    except ImportError:
        raise SystemExit("--stems needs a Snowball stemmer: pip install snowballstemmer (or apt-get install python3-snowballstemmer)")


def stem_classes(vocab, stem=None):
    """canonical[id] per piece of `vocab` (piece -> id): the smallest id of its stem class."""
    stem = stem or english_stemmer()
    canonical = np.arange(max(vocab.values()) + 1, dtype=np.int64)
    classes = {}
    for piece, i in vocab.items():
        if WHOLE_WORD.fullmatch(piece):
            classes.setdefault(stem(piece), []).append(i)
    for ids in classes.values():
        canonical[ids] = min(ids)
    return canonical


def classes_record(canonical):
    """What training.json records about the table."""
    joined = canonical[canonical != np.arange(len(canonical))]  # each piece that is not its class's smallest: that piece
    return {"stemmer": f"Snowball {ALGORITHM}", "pieces": "whole-word pieces [a-z]+",
            "merged_pieces": len(joined), "classes_of_two_or_more": len(np.unique(joined))}
