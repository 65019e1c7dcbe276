"""Tests of the lexical part's recipe (model/graph/lexical.py; numpy, no data, no onnx).
The served graph is checked against this recipe by tests/embedder/legal-model.test.ts (the parity
fixture model/graph/matryoshka.py writes from it).

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import unittest

import numpy as np

from model.rules.bm25 import B, K1, Shares, balanced_buckets, counted_length, lexical_part, signed_weights
from model.rules.sparse_weights import sparse_vector


def saturated(tf, length, avg_len):
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg_len))


class LexicalRecipe(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(1)
        self.idf = rng.uniform(0.5, 9.0, 100)
        self.idf[[0, 1]] = 0.0  # special pieces
        self.bucket = balanced_buckets(self.idf, 8)
        self.weight = signed_weights(self.idf, 0)

    def test_buckets_are_dealt_by_rarity(self):
        counts = np.bincount(self.bucket, minlength=8)
        self.assertEqual(counts.tolist(), [13, 13, 13, 13, 12, 12, 12, 12])
        rarest = np.argsort(-self.idf)[:8]
        self.assertEqual(sorted(self.bucket[rarest].tolist()), list(range(8)))  # the 8 rarest never share

    def test_weights_are_signed_square_roots_of_idf_fixed_by_the_seed(self):
        np.testing.assert_allclose(np.abs(self.weight), np.sqrt(self.idf), rtol=1e-6)
        self.assertEqual(self.weight[[0, 1]].tolist(), [0.0, 0.0])
        self.assertTrue((self.weight > 0).any() and (self.weight < 0).any())
        np.testing.assert_array_equal(self.weight, signed_weights(self.idf, 0))
        self.assertFalse(np.array_equal(self.weight, signed_weights(self.idf, 1)))

    def test_learned_weights_take_idfs_place_keeping_the_signs_and_the_zeros(self):
        learned = np.full(100, 2.0)
        weight = signed_weights(self.idf, 0, learned)
        np.testing.assert_array_equal(np.sign(weight), np.sign(self.weight))
        np.testing.assert_allclose(np.abs(weight[2:]), 2.0)
        self.assertEqual(weight[[0, 1]].tolist(), [0.0, 0.0])  # pieces without idf stay weightless

    def test_sparse_weightings_tf_idf_and_relative(self):
        ids = [0, 5, 5, 7]  # 0 is special: left out, and not counted in the length
        weight = np.arange(100, dtype=np.float64) + 1.0
        pieces, tf = sparse_vector(ids, self.idf, 95.0)
        self.assertEqual(pieces.tolist(), [5, 7])
        _, by_weight = sparse_vector(ids, self.idf, 95.0, weighting="idf", weight=weight)
        _, relative = sparse_vector(ids, self.idf, 95.0, weighting="relative", weight=weight)
        np.testing.assert_allclose(by_weight, tf * weight[[5, 7]])
        np.testing.assert_allclose(relative, tf * weight[[5, 7]] / self.idf[[5, 7]])
        with self.assertRaises(ValueError):
            sparse_vector(ids, self.idf, 95.0, weighting="bm42")

    def test_word_pairs_follow_the_pieces_as_src_embedder_sparse_ts_gives_them(self):
        # the table and texts of tests/embedder/sparse.test.ts's word-pair cases, the same figures
        idf = np.array([0, 0, 2, 4, 0.5])
        learned = np.array([0, 0, 3, 2, 1.0])
        pairs = {"weight": 0.5, "slots": 7, "continuation": np.array([0, 0, 0, 0, 1], dtype=bool)}
        slot = lambda a, c: 5 + (a * 5 + c) % 7  # noqa: E731
        sat = lambda tf, length: tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 4))  # noqa: E731
        ids = [0, 2, 3, 1, 2, 3, 4, 1]
        indices, values = sparse_vector(ids, idf, 4.0, weighting="tf", weight=learned, bigrams=pairs)
        pieces, piece_values = sparse_vector(ids, idf, 4.0, weighting="tf", weight=learned)
        self.assertEqual(indices[:3].tolist(), pieces.tolist())
        np.testing.assert_allclose(values[:3], piece_values)
        self.assertEqual(indices[3:].tolist(), sorted([slot(2, 3), slot(3, 2)]))  # (3, 4): 4 continues a word
        got = dict(zip(indices.tolist(), values.tolist()))
        self.assertAlmostEqual(got[slot(2, 3)], 0.5 * sat(2, 5))
        self.assertAlmostEqual(got[slot(3, 2)], 0.5 * sat(1, 5))
        for weighting, factor in (("idf", np.sqrt(3 * 2)), ("relative", np.sqrt(1.5 * 0.5))):
            indices, values = sparse_vector([2, 3], idf, 4.0, weighting=weighting, weight=learned, bigrams=pairs)
            self.assertAlmostEqual(dict(zip(indices.tolist(), values.tolist()))[slot(2, 3)], 0.5 * sat(1, 2) * factor)
        indices, values = sparse_vector([2, 3, 2], idf, 4.0, weight=learned, bigrams={**pairs, "slots": 1})  # one slot: pairs add up
        self.assertEqual(indices.tolist(), [2, 3, 5])
        self.assertAlmostEqual(values[2], 2 * 0.5 * sat(1, 3))
        self.assertEqual(sparse_vector([0, 3, 1], idf, 4.0, bigrams=pairs)[0].tolist(), [3])

    def test_query_neighbours_as_src_embedder_sparse_ts_gives_them(self):
        # the table and texts of tests/embedder/sparse.test.ts's query-neighbour cases, the same figures
        idf = np.array([0, 0, 2, 4, 0.5])
        learned = np.array([0, 0, 3, 2, 1.0])
        expansion = {"weight": 0.3, "sources": np.array([2, 2, 3]), "targets": np.array([4, 3, 4]),
                     "similarities": np.array([0.8, 0.5, 0.6], dtype=np.float32).astype(np.float64)}
        sat = lambda tf, length: tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 4))  # noqa: E731
        indices, values = sparse_vector([0, 2, 2, 3, 1], idf, 4.0, weight=learned, expansion=expansion)
        self.assertEqual(indices.tolist(), [2, 3, 4])
        np.testing.assert_allclose(values, [sat(2, 3), sat(1, 3), 0.3 * np.float32(0.8) * sat(2, 3)])  # 4: the larger proposal
        indices, values = sparse_vector([2], idf, 4.0, weight=learned, expansion=expansion)
        self.assertEqual(indices.tolist(), [2, 3, 4])
        np.testing.assert_allclose(values, np.array([1, 0.3 * np.float32(0.5), 0.3 * np.float32(0.8)]) * sat(1, 1))
        for weighting, factor in (("idf", 1.0), ("relative", 2.0)):  # the neighbour's own factor
            indices, values = sparse_vector([2], idf, 4.0, weighting=weighting, weight=learned, expansion=expansion)
            self.assertAlmostEqual(values[indices.tolist().index(4)], 0.3 * np.float32(0.8) * sat(1, 1) * factor)
        for ids in ([2, 2, 3], [4, 4]):  # documents (no expansion) and texts without listed pieces
            self.assertEqual(sparse_vector(ids, idf, 4.0, weight=learned)[0].tolist(),
                             sparse_vector(ids, idf, 4.0, weight=learned, expansion=None if ids[0] == 2 else expansion)[0].tolist())
        pairs = {"weight": 0.5, "slots": 7, "continuation": np.zeros(5, dtype=bool)}  # no pairs with a neighbour
        self.assertEqual(sparse_vector([2, 3], idf, 4.0, weight=learned, bigrams=pairs, expansion=expansion)[0].tolist(), [2, 3, 4, 5 + (2 * 5 + 3) % 7])

    def test_each_bucket_holds_its_pieces_bm25_saturated_weights(self):
        a = int(np.argmax(self.idf))
        b = next(p for p in range(2, 100) if self.bucket[p] != self.bucket[a])
        avg_len = 3.0
        v = lexical_part([[0, a, a, a, b, 1]], self.bucket, self.weight, avg_len)[0]  # 4 counted pieces
        raw = np.zeros(8)
        raw[self.bucket[a]] = self.weight[a] * saturated(3, 4, avg_len)
        raw[self.bucket[b]] = self.weight[b] * saturated(1, 4, avg_len)
        np.testing.assert_allclose(v, raw / np.linalg.norm(raw), rtol=1e-6)

    def test_saturation_makes_repeats_count_less_than_in_proportion(self):
        self.assertLess(saturated(4, 4, 4.0), 4 * saturated(1, 4, 4.0))
        self.assertGreater(saturated(4, 4, 4.0), saturated(1, 4, 4.0))

    def test_pieces_sharing_a_bucket_with_opposite_signs_cancel(self):
        share = [p for p in range(2, 100) if self.bucket[p] == self.bucket[2]]
        opposite = next(p for p in share if np.sign(self.weight[p]) != np.sign(self.weight[2]))
        v = lexical_part([[2, opposite]], self.bucket, self.weight, 2.0)[0]
        self.assertAlmostEqual(abs(v[self.bucket[2]]), 1.0)  # the one bucket, unit length either way
        both = self.weight[2] + self.weight[opposite]
        self.assertLess(abs(both), max(abs(self.weight[2]), abs(self.weight[opposite])))

    def test_a_text_of_weightless_pieces_gives_a_zero_part(self):
        self.assertFalse(lexical_part([[0, 1, 1]], self.bucket, self.weight, 2.0).any())

    def test_shares_ramp_from_short_to_long_texts_by_counted_pieces(self):
        shares = Shares((0.2, 0.2, 0.6), (0.4, 0.6, 0.0), (4, 12))
        np.testing.assert_allclose(shares.at([0, 4, 8, 12, 40]), [[0.4, 0.6, 0.0], [0.4, 0.6, 0.0], [0.3, 0.4, 0.3], [0.2, 0.2, 0.6], [0.2, 0.2, 0.6]])
        self.assertEqual(counted_length([0, 5, 5, 1, 7], self.weight), 3.0)  # the special pieces 0 and 1 do not count
        self.assertEqual(Shares.of({"shares": shares.record()}).at([8]).tolist(), shares.at([8]).tolist())
        self.assertEqual(Shares.of({"weights": {"transformer": 0.25, "static": 0.55, "lexical": 0.2}}).at([1]).tolist(), [[0.25, 0.55, 0.2]])
        with self.assertRaises(SystemExit):
            Shares((0.2, 0.2, 0.6), lengths=(12, 4))


if __name__ == "__main__":
    unittest.main()
