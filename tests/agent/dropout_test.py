# SPDX-License-Identifier: MIT
# dropout_test.py -- agent/glue/dropout.py against real torch: with
# disable_dropout, dropout in training mode returns its input, and fused
# attention runs with dropout_p=0.
import unittest

from glue_boot import boot, run

glue, tp = boot(disable_dropout=True)
import torch  # noqa: E402 -- after the glue, as under the agent
import torch.nn.functional as F  # noqa: E402


class DropoutTest(unittest.TestCase):
    def test_dropout_is_identity(self):
        x = torch.randn(16, 8)
        self.assertTrue(torch.equal(F.dropout(x, 0.5, True), x))
        d = torch.nn.Dropout(0.9).train()
        self.assertTrue(torch.equal(d(x), x))

    def test_attention_dropout_p(self):
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is None:
            self.skipTest("this torch has no scaled_dot_product_attention")
        q = torch.randn(1, 2, 4, 8)
        want = sdpa(q, q, q, None, 0.0)
        self.assertTrue(torch.equal(sdpa(q, q, q, None, 0.9), want))
        self.assertTrue(torch.equal(sdpa(q, q, q, dropout_p=0.9), want))

    def test_multihead_attention(self):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(8, 2, dropout=0.9).train()
        x = torch.randn(4, 1, 8)
        a, _ = mha(x, x, x)
        mha.eval()
        b, _ = mha(x, x, x)
        self.assertTrue(torch.allclose(a, b))


if __name__ == "__main__":
    run(globals())
