"""Tests of the document form's rule (model/rules/document_form.py; numpy, no data). The served
graph is checked against it by model/graph/test_lexical_graph.py (a stand-in graph) and
tests/embedder/legal-model.test.ts (the parity fixture's document_head/document_tail, written by
python3 -m model.graph.matryoshka --parity-only).

    npm run test:model
"""
import unittest

import numpy as np

from model.rules.bm25 import balanced_buckets, bm25_of, graph_constants, lexical_part, raw_norms, signed_weights
from model.rules.document_form import SPREAD, hadamard, spread


class DocumentFormRecipe(unittest.TestCase):
    def test_hadamard_is_orthogonal_with_even_entries(self):
        h = hadamard(SPREAD)
        np.testing.assert_allclose(h @ h.T, np.eye(SPREAD), atol=1e-12)
        np.testing.assert_allclose(np.abs(h), 1 / np.sqrt(SPREAD))
        with self.assertRaises(ValueError):
            hadamard(48)

    def test_spread_keeps_dot_products_and_spreads_the_last_component(self):
        rng = np.random.default_rng(0)
        q, d = rng.normal(size=(3, 200)), rng.normal(size=(4, 200))
        np.testing.assert_allclose(spread(q) @ spread(d).T, q @ d.T, atol=1e-10)
        slack = np.zeros((1, 200))
        slack[0, -1] = 1.0
        np.testing.assert_allclose(np.abs(spread(slack)[0, -SPREAD:]), 1 / np.sqrt(SPREAD))
        self.assertFalse(spread(slack)[0, :-SPREAD].any())  # no listed prefix changes

    def test_raw_norm_is_the_unnormalised_lexical_part(self):
        rng = np.random.default_rng(1)
        idf = rng.uniform(0.5, 9.0, 100)
        idf[[0, 1]] = 0.0
        bucket, weight = balanced_buckets(idf, 16), signed_weights(idf, 0)
        ids = [[0, 5, 5, 9, 40, 1], [0, 7, 1], [0, 1]]
        norms = raw_norms(ids, bucket, weight, 3.0, 0.75, 0.5)
        unit = lexical_part(ids, bucket, weight, 3.0, 0.75, 0.5)
        self.assertEqual(norms[2], 0.0)  # nothing counted: g = 0, the document is its dense parts
        one = np.zeros(16)
        np.add.at(one, bucket[[7]], weight[[7]] * (0.75 + 1) / (1 + 0.75 * (1 - 0.5 + 0.5 * 1 / 3.0)))
        self.assertAlmostEqual(norms[1], float(np.linalg.norm(one)), places=6)
        np.testing.assert_allclose(np.linalg.norm(unit[:2], axis=1), 1.0, atol=1e-6)

    def test_bm25_constants_read_back_from_the_graph_values(self):
        k1, b, avg = 0.75, 0.5, 95.1
        init = {name: np.float32(value) for name, value in graph_constants(k1, b, avg).items()}
        got = bm25_of(init)
        np.testing.assert_allclose(got, (k1, b, avg), rtol=1e-5)


if __name__ == "__main__":
    unittest.main()
