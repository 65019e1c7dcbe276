"""Tests of the stem classes (model/stem_classes.py) and of the lexical part and sparse vectors
that count them (model/add_lexical.py, model/document_form.py): numpy with a stand-in stemmer; the
real Snowball stems where a stemmer package is installed; the graph where onnx and onnxruntime are.

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import importlib.util
import os
import tempfile
import unittest

import numpy as np

from add_lexical import B, K1, balanced_buckets, lexical_part, read_term_weights, signed_weights, sparse_vector
from document_form import raw_norms
from stem_classes import canonical_ids, stem_classes

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

    def test_term_weights_learned_with_other_classes_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.npz")
            np.savez(path, weight=np.ones(len(self.idf)), idf=self.idf, step=1)
            with self.assertRaisesRegex(SystemExit, "pass --stems to both scripts"):
                read_term_weights(path, self.idf, self.canonical)
            np.savez(path, weight=np.ones(len(self.idf)), idf=self.idf, step=1, canonical=self.canonical)
            self.assertEqual(read_term_weights(path, self.idf, self.canonical)[1], 1)
            with self.assertRaisesRegex(SystemExit, "pass --stems to both scripts"):
                read_term_weights(path, self.idf, None)


@unittest.skipUnless(importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxruntime"), "needs onnx and onnxruntime")
class StemClassesGraph(unittest.TestCase):
    def test_the_graph_counts_classes_as_the_recipe_does_in_both_forms(self):
        import onnx
        import onnxruntime as ort
        from add_lexical import OUTPUT, Shares, add_to_graph
        from document_form import add_document_form, served_form
        from test_document_form import stand_in_model
        vocab, width_dense, buckets = 120, 8, 64 + 8
        rng = np.random.default_rng(5)
        canonical = np.arange(vocab)
        canonical[[11, 12]] = 10  # one class of three pieces
        canonical[[21]] = 20
        idf = rng.uniform(0.5, 5.0, vocab)
        idf[[0, 1, 2, 3]] = 0.0  # 0 pad, 1 [CLS], 2 marker, 3 [SEP]
        idf = idf[canonical]
        table = rng.normal(size=(vocab, width_dense)).astype(np.float32)
        model = stand_in_model(table)
        bucket, weight = balanced_buckets(idf, buckets, canonical), signed_weights(idf, 0, None, canonical)
        parts = np.zeros((3, width_dense + buckets))
        parts[1, :width_dense] = 1.0
        parts[2, width_dense:] = 1.0
        shares = Shares((0, 0.4, 0.6))
        add_to_graph(model, bucket, weight, 4.0, parts, shares, normalise_dense=True, canonical=canonical)
        add_document_form(model, marker=2, cls=1, c=3.0, g_max=2.0, max_lexical_share=0.6)
        onnx.checker.check_model(model)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        run = lambda ids: session.run([OUTPUT], {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)})[0][0, 0]
        ids = [1, 10, 11, 12, 20, 21, 30, 3]
        record = {"document_form": {"c": 3.0, "g_max": 2.0, "m_x": float(np.sqrt(1 + 0.6 * 3))}, "shares": shares.record()}
        dense = table[ids].sum(0)
        dense = np.sqrt(0.4) * dense / np.linalg.norm(dense)
        lexical = np.sqrt(0.6) * lexical_part([ids], bucket, weight, 4.0, canonical=canonical)
        for marker, document in ((1, False), (2, True)):
            served = run([marker] + ids[1:])
            recipe = served_form(record, [ids], bucket, weight, 4.0, K1, B, dense[None], lexical, np.eye(width_dense + buckets), document, canonical)[0]
            np.testing.assert_allclose(served / np.linalg.norm(served), recipe, atol=1e-5)
        # the same text with each class's pieces spelled by its smallest one serves the same vector
        np.testing.assert_allclose(run(ids)[width_dense:], run([1, 10, 10, 10, 20, 20, 30, 3])[width_dense:], atol=1e-6)


if __name__ == "__main__":
    unittest.main()
