"""Tests of the stem classes (model/sparse/stem_classes.py) and of the rules that count them
(model/rules/bm25.py, sparse_weights.py): numpy with a stand-in stemmer; the real Snowball stems
where a stemmer package is installed. The graph's counting: model/graph/test_lexical_graph.py.

    npm run test:model
"""
import importlib.util
import unittest

import numpy as np

from model.rules.bm25 import B, K1, balanced_buckets, canonical_ids, lexical_part, raw_norms, signed_weights
from model.rules.sparse_weights import sparse_vector
from model.sparse.stem_classes import stem_classes

# a stand-in for Snowball: strips a few English endings
STEM = lambda word: next((word[: -len(e)] for e in ("ations", "ation", "ated", "ate", "ies", "y", "s") if word.endswith(e)), word)  # noqa: E731
VOCAB = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "terminate": 3, "termination": 4, "terminated": 5, "party": 6,
         "parties": 7, "##s": 8, "2019": 9, "ÿs": 10, "terminations": 11}


def saturated(tf, length, avg_len, k1=K1, b=B):
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len))


class StemClasses(unittest.TestCase):
    def test_whole_word_pieces_of_one_stem_share_their_smallest_id(self):
        canonical = stem_classes(VOCAB, STEM)
        self.assertEqual(canonical[[3, 4, 5, 11]].tolist(), [3, 3, 3, 3])
        self.assertEqual(canonical[[6, 7]].tolist(), [6, 6])
        # continuations, digits, letters outside a-z and specials stay their own
        for i in (0, 1, 2, 8, 9, 10):
            self.assertEqual(int(canonical[i]), i)
        self.assertTrue((canonical <= np.arange(len(canonical))).all())

    @unittest.skipUnless(importlib.util.find_spec("snowballstemmer") or importlib.util.find_spec("Stemmer"), "needs a Snowball stemmer")
    def test_snowball_english_merges_inflections_and_keeps_different_words_apart(self):
        canonical = stem_classes({"terminate": 0, "termination": 1, "terminated": 2, "liability": 3, "liabilities": 4,
                                  "general": 5, "generate": 6})
        self.assertEqual(canonical.tolist(), [0, 0, 0, 3, 3, 5, 6])

    def test_canonical_ids_without_a_table_are_the_ids(self):
        np.testing.assert_array_equal(canonical_ids([3, 4], None), [3, 4])
        np.testing.assert_array_equal(canonical_ids([3, 4], stem_classes(VOCAB, STEM)), [3, 3])


class CountedByClass(unittest.TestCase):
    def setUp(self):
        self.canonical = stem_classes(VOCAB, STEM)
        n = len(self.canonical)
        self.idf = np.linspace(1.0, 3.0, n)
        self.idf[[0, 1, 2]] = 0.0
        self.idf = self.idf[self.canonical]  # piece_statistics gives a class's pieces its idf

    def test_a_class_is_one_term_in_the_sparse_vector_and_the_lexical_part(self):
        ids = [1, 3, 4, 5, 6, 2]  # three pieces of one class, one of another
        pieces, values = sparse_vector(ids, self.idf, 4.0, canonical=self.canonical)
        self.assertEqual(pieces.tolist(), [3, 6])
        np.testing.assert_allclose(values, [saturated(3, 4, 4.0), saturated(1, 4, 4.0)])
        bucket = balanced_buckets(self.idf, 4, self.canonical)
        weight = signed_weights(self.idf, 0, None, self.canonical)
        merged = lexical_part([ids], bucket, weight, 4.0, canonical=self.canonical)[0]
        same = lexical_part([[1, 3, 3, 3, 6, 2]], bucket, weight, 4.0)[0]
        np.testing.assert_allclose(merged, same)
        norms = raw_norms([ids], bucket, weight, 4.0, K1, B, self.canonical)
        self.assertAlmostEqual(float(norms[0]), float(raw_norms([[1, 3, 3, 3, 6, 2]], bucket, weight, 4.0, K1, B)[0]))

    def test_a_class_shares_its_bucket_and_signed_weight_and_classes_are_dealt_by_rarity(self):
        bucket = balanced_buckets(self.idf, 4, self.canonical)
        weight = signed_weights(self.idf, 3, np.full(len(self.idf), 2.0), self.canonical)
        for members in ([3, 4, 5, 11], [6, 7]):
            self.assertEqual(len(set(bucket[members].tolist())), 1)
            self.assertEqual(len(set(weight[members].tolist())), 1)
        classes = np.flatnonzero(self.canonical == np.arange(len(self.canonical)))
        self.assertEqual(sorted(np.bincount(bucket[classes], minlength=4).tolist()), [2, 2, 2, 2])


if __name__ == "__main__":
    unittest.main()
