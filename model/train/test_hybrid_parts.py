"""model/train/hybrid_parts.py's torch parts against the numpy recipe (add_lexical.lexical_part, the
static sum) on random ids, and the hybrid score as the served vectors' dot product. Needs numpy
and torch (skipped without them, as on a machine with the standard library only)."""
import importlib.util
import os
import tempfile
import unittest

HAVE = all(importlib.util.find_spec(m) for m in ("numpy", "torch"))


@unittest.skipUnless(HAVE, "needs numpy and torch")
class HybridParts(unittest.TestCase):
    def test_parts_match_the_numpy_recipe(self):
        import numpy as np
        import torch
        from model.rules.bm25 import B, counted_length, K1, lexical_part, Shares
        from model.train.hybrid_parts import FixedParts
        rng = np.random.default_rng(0)
        vocab, width, buckets = 300, 8, 16
        table = rng.integers(-127, 128, (vocab, width)).astype(np.int8)
        scale = rng.uniform(0.001, 0.01, (vocab, 1)).astype(np.float32)
        weight = (rng.choice([-1.0, 1.0], vocab) * rng.uniform(0.1, 3, vocab)).astype(np.float32)
        weight[[0, 101, 102]] = 0  # padding and the special pieces carry no weight
        bucket = rng.integers(0, buckets, vocab)
        shares = Shares((0.2, 0.2, 0.6), (0.4, 0.6, 0.0), (4, 12))
        texts = [[101] + rng.integers(103, vocab, n).tolist() + [102] for n in (1, 3, 7, 20, 40)]
        texts.append([101, 200, 200, 200, 150, 102])  # repeated pieces: saturation
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "parts.npz")
            np.savez(path, static_int8=table, static_scale=scale, bucket=bucket, weight=weight, avg_len=np.float32(9.5),
                     k1=np.float32(K1), b=np.float32(B), long=np.array(shares.long, np.float32),
                     short=np.array(shares.short, np.float32), lengths=np.array(shares.lengths, np.float32))
            fixed = FixedParts(path, "cpu")
        x = torch.zeros((len(texts), max(map(len, texts))), dtype=torch.long)
        for r, t in enumerate(texts):
            x[r, :len(t)] = torch.tensor(t)
        static, lexical, w = fixed.encode(x)
        dense = table.astype(np.float32) * scale
        want_static = np.stack([dense[t].sum(0) for t in texts])
        want_static /= np.linalg.norm(want_static, axis=1, keepdims=True)
        np.testing.assert_allclose(static.numpy(), want_static, atol=1e-5)
        np.testing.assert_allclose(lexical.numpy(), lexical_part(texts, bucket, weight, 9.5), atol=1e-5)
        np.testing.assert_allclose(w.numpy(), shares.at([counted_length(t, weight) for t in texts]), atol=1e-6)
        # the score is the dot product of the served vectors [sqrt(w)·part, ...]
        t = torch.nn.functional.normalize(torch.randn(len(texts), 4), dim=-1)
        served = torch.cat([w[:, k:k + 1].sqrt() * p for k, p in enumerate((t, static, lexical))], dim=1)
        got = FixedParts.score(t, t, (static, lexical, w), (static, lexical, w))
        np.testing.assert_allclose(got.numpy(), (served @ served.T).numpy(), atol=1e-5)

    def test_document_form_is_the_served_product(self):
        """With the folder's document form, a query · passage score is what document_form.served_form's
        vectors give (the rotation the identity, a zero column in place of the slack's)."""
        import numpy as np
        import torch
        from model.rules.bm25 import counted_length, Shares
        from model.rules.document_form import served_form
        from model.train.hybrid_parts import FixedParts
        rng = np.random.default_rng(1)
        vocab, width, buckets, k1, b, avg = 300, 8, 64, 0.75, 0.5, 9.5  # served_form spreads over 64 components
        table = rng.integers(-127, 128, (vocab, width)).astype(np.int8)
        scale = rng.uniform(0.001, 0.01, (vocab, 1)).astype(np.float32)
        weight = (rng.choice([-1.0, 1.0], vocab) * rng.uniform(0.1, 3, vocab)).astype(np.float32)
        weight[[0, 101, 102]] = 0
        bucket = rng.integers(0, buckets, vocab)
        shares = Shares((0.2, 0.2, 0.6), (0.4, 0.6, 0.0), (4, 12))
        record = {"document_form": {"c": 2.5, "g_max": 2.0}, "shares": {"long": list(shares.long), "short": list(shares.short)}}
        m_x2 = 1 + 0.6 * (2.0 ** 2 - 1)
        texts = [[101] + rng.integers(103, vocab, n).tolist() + [102] for n in (2, 5, 9, 30, 60)]
        texts.append([101, 200, 200, 200, 150, 102])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "parts.npz")
            np.savez(path, static_int8=table, static_scale=scale, bucket=bucket, weight=weight, avg_len=np.float32(avg),
                     k1=np.float32(k1), b=np.float32(b), long=np.array(shares.long, np.float32),
                     short=np.array(shares.short, np.float32), lengths=np.array(shares.lengths, np.float32),
                     form_c=np.float32(2.5), form_g_max=np.float32(2.0), form_m_x2=np.float32(m_x2))
            fixed = FixedParts(path, "cpu")
        x = torch.zeros((len(texts), max(map(len, texts))), dtype=torch.long)
        for r, t in enumerate(texts):
            x[r, :len(t)] = torch.tensor(t)
        q_parts, d_parts = fixed.encode(x), fixed.encode(x, document=True)
        t = torch.nn.functional.normalize(torch.randn(len(texts), 4, dtype=torch.float64), dim=-1).float()
        got = FixedParts.score(t, t, q_parts, d_parts).numpy()
        w = shares.at([counted_length(tt, weight) for tt in texts])
        dense = np.concatenate([np.sqrt(w[:, :1]) * t.numpy(), np.sqrt(w[:, 1:2]) * q_parts[0].numpy()], axis=1)
        lexical = np.concatenate([np.sqrt(w[:, 2:]) * q_parts[1].numpy(), np.zeros((len(texts), 1))], axis=1)
        rotation = np.eye(dense.shape[1] + lexical.shape[1])
        args = (texts, bucket, weight, avg, k1, b, dense, lexical, rotation)
        q, d = served_form(record, *args, document=False), served_form(record, *args, document=True)
        np.testing.assert_allclose(got, q @ d.T, atol=1e-5)
        self.assertTrue((np.abs(got - FixedParts.score(t, t, q_parts, q_parts).numpy()) > 1e-3).any())  # the forms differ


if __name__ == "__main__":
    unittest.main()
