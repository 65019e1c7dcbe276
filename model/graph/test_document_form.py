"""Tests of the document form's recipe (model/document_form.py; numpy, no data). The served graph
is checked against the recipe by tests/embedder/legal-model.test.ts (the parity fixture's
document_head/document_tail, written by model/matryoshka.py --parity-only).

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import importlib.util
import unittest

import numpy as np

from add_lexical import balanced_buckets, bm25_of, lexical_part, signed_weights
from document_form import SPREAD, hadamard, raw_norms, spread


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
        init = {"lexical.k1_plus_1": np.float32(k1 + 1), "lexical.k1_fixed": np.float32(k1 * (1 - b)),
                "lexical.k1_per_length": np.float32(k1 * b / avg)}
        got = bm25_of(init)
        np.testing.assert_allclose(got, (k1, b, avg), rtol=1e-5)


def stand_in_model(table):
    """A stand-in dense graph for add_lexical.add_to_graph: each token's row of `table`, as the
    hybrid's per-token unit parts (also model/test_stem_classes.py's)."""
    import onnx
    from onnx import TensorProto, helper
    from add_lexical import OUTPUT
    graph = helper.make_graph(
        [helper.make_node("Gather", ["dense.table", "input_ids"], [OUTPUT])], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "l"]) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["b", "l", table.shape[1]])],
        [onnx.numpy_helper.from_array(table, "dense.table")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


@unittest.skipUnless(importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxruntime"), "needs onnx and onnxruntime")
class DocumentFormGraph(unittest.TestCase):
    """The graph's nodes on a small folder-less stand-in: a lexical part and rotation built by
    add_lexical.add_to_graph over an identity 'dense' graph, then add_document_form."""

    def test_marker_selects_the_form_and_cls_goes_back(self):
        import onnx
        import onnxruntime as ort
        from add_lexical import OUTPUT, Shares, add_to_graph
        from document_form import add_document_form
        vocab, width_dense, buckets = 120, 8, 64 + 8  # the spread needs ≥ 64 components; every bucket gets a piece
        rng = np.random.default_rng(2)
        idf = rng.uniform(0.5, 5.0, vocab)
        idf[[0, 1, 2, 3]] = 0.0  # 0 pad, 1 [CLS], 2 marker, 3 [SEP]
        table = rng.normal(size=(vocab, width_dense)).astype(np.float32)
        model = stand_in_model(table)
        bucket, weight = balanced_buckets(idf, buckets), signed_weights(idf, 0)
        parts = np.zeros((3, width_dense + buckets))
        parts[1, :width_dense] = 1.0
        parts[2, width_dense:] = 1.0
        add_to_graph(model, bucket, weight, 4.0, parts, Shares((0, 0.4, 0.6)), normalise_dense=True)
        add_document_form(model, marker=2, cls=1, c=10.0, g_max=2.0, max_lexical_share=0.6)
        onnx.checker.check_model(model)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        run = lambda ids: session.run([OUTPUT], {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)})[0][0, 0]
        query, document = run([1, 5, 6, 6, 9, 3]), run([2, 5, 6, 6, 9, 3])
        self.assertAlmostEqual(float(np.linalg.norm(document)), 1.0, places=5)
        # the dense part read [CLS] in the marker's place: its components are the query's, ÷ Mx
        dense = table[[1, 5, 6, 6, 9, 3]].sum(0)
        dense /= np.linalg.norm(dense)
        m_x = np.sqrt(1 + 0.6 * (2.0 ** 2 - 1))
        np.testing.assert_allclose(query[:width_dense] / np.linalg.norm(query), np.sqrt(0.4) * dense, atol=1e-5)
        np.testing.assert_allclose(document[:width_dense], np.sqrt(0.4) * dense / m_x, atol=1e-5)
        # the slack (the last component before the spread, which is its own inverse): 0 for a query
        self.assertAlmostEqual(float(spread(query[None])[0, -1]), 0.0, places=6)
        self.assertGreater(float(spread(document[None])[0, -1]), 0.0)
        self.assertFalse(np.allclose(query, document))
        # the marker anywhere but position 0 is an ordinary piece: the query form, the dense part reading its row
        later = run([1, 2, 5, 3])
        self.assertAlmostEqual(float(spread(later[None])[0, -1]), 0.0, places=6)
        dense_later = table[[1, 2, 5, 3]].sum(0)
        np.testing.assert_allclose(later[:width_dense] / np.linalg.norm(later), np.sqrt(0.4) * dense_later / np.linalg.norm(dense_later), atol=1e-5)


if __name__ == "__main__":
    unittest.main()
