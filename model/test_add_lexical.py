"""Tests of the lexical part's recipe (model/add_lexical.py; numpy, the shipped tokenizer, no data).
The served graph is checked against this recipe by tests/embedder/legal-model.test.ts.

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import unittest

import numpy as np

from add_lexical import balanced_buckets, lexical_part, parse_weights, rotation


class LexicalRecipe(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(1)
        self.idf = rng.uniform(0.5, 9.0, 100)
        self.weight = (self.idf ** 2 / (self.idf ** 2).max()).astype(np.float32)
        self.bucket = balanced_buckets(self.idf, 8)

    def test_buckets_are_dealt_by_rarity(self):
        counts = np.bincount(self.bucket, minlength=8)
        self.assertEqual(counts.tolist(), [13, 13, 13, 13, 12, 12, 12, 12])
        rarest = np.argsort(-self.idf)[:8]
        self.assertEqual(sorted(self.bucket[rarest].tolist()), list(range(8)))  # the 8 rarest never share

    def test_rotation_is_orthogonal_and_fixed_by_its_seed(self):
        r = rotation(8, 0)
        np.testing.assert_allclose(r @ r.T, np.eye(8), atol=1e-6)
        np.testing.assert_array_equal(r, rotation(8, 0))
        self.assertFalse(np.allclose(r, rotation(8, 1)))

    def test_unrotated_part_is_sqrt_tf_idf_per_bucket(self):
        ident = np.eye(8, dtype=np.float32)
        piece = int(np.argmax(self.idf))
        others = [p for p in range(100) if self.bucket[p] != self.bucket[piece]][:1]
        v = lexical_part([[piece, piece, piece, piece] + others], self.bucket, self.weight, ident)[0]
        # four times the rarest piece beside one other: sqrt(4)·idf against 1·idf before normalising
        raw = np.zeros(8)
        raw[self.bucket[piece]] = np.sqrt(4 * self.weight[piece])
        raw[self.bucket[others[0]]] = np.sqrt(self.weight[others[0]])
        np.testing.assert_allclose(v, raw / np.linalg.norm(raw), rtol=1e-6)

    def test_rotation_keeps_dot_products(self):
        texts = [[1, 5, 9, 9], [5, 9, 40], [70, 71]]
        plain = lexical_part(texts, self.bucket, self.weight, np.eye(8, dtype=np.float32))
        turned = lexical_part(texts, self.bucket, self.weight, rotation(8, 0))
        np.testing.assert_allclose(turned @ turned.T, plain @ plain.T, atol=1e-6)
        self.assertTrue((np.abs(turned) > 0).all())  # the mass is spread over every component

    def test_a_text_of_weightless_pieces_gives_a_zero_part(self):
        self.weight[[3, 4]] = 0
        self.assertFalse(lexical_part([[3, 4]], self.bucket, self.weight, rotation(8, 0)).any())

    def test_weights_must_be_three_shares_summing_to_one(self):
        self.assertEqual(parse_weights("0.25,0.40,0.35"), (0.25, 0.40, 0.35))
        for bad in ("0.5,0.5", "0.5,0.5,0.5", "a,b,c", "-0.1,0.6,0.5"):
            with self.assertRaises(SystemExit, msg=bad):
                parse_weights(bad)


if __name__ == "__main__":
    unittest.main()
