# SPDX-License-Identifier: MIT
# backward_test.py -- agent/glue/backward.py against real torch: the
# start-of-step snapshot before a step's first backward, the `backward`
# events of an accumulating loop, torch.autograd.backward, and (with
# loss_counts, as the accumulation check configures it) the elements a
# mean-reduced loss averaged over.
import unittest

from glue_boot import boot, run

glue, tp = boot(loss_counts=True)
import torch  # noqa: E402 -- after the glue, as under the agent
import torch.nn.functional as F  # noqa: E402


class BackwardTest(unittest.TestCase):
    def setUp(self):
        tp.clear()

    def test_accumulation(self):
        m = torch.nn.Linear(3, 4)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x, y = torch.randn(6, 3), torch.tensor([0, 1, 2, -100, 1, 3])
        for micro in range(2):
            F.cross_entropy(m(x), y).backward()
        opt.step()
        kinds = [k for k in tp.kinds() if k in ("snapshot", "backward", "step")]
        self.assertEqual(kinds, ["snapshot", "backward", "backward", "step", "step"])
        self.assertEqual(tp.of("snapshot")[0]["why"], "backward")
        b = tp.of("backward")
        self.assertEqual([e["count"] for e in b], [1, 2])
        self.assertEqual(b[0]["mean_over"], 5, "the ignored target is not counted")
        self.assertEqual((b[0]["numel"], b[0]["dtype"]), (1, "torch.float32"))
        self.assertIsInstance(b[0]["loss"], float)

    def test_autograd_backward(self):
        w = torch.ones(2, requires_grad=True)
        torch.autograd.backward([(w * 3).sum()])
        b = tp.of("backward")
        self.assertEqual(len(b), 1)
        self.assertEqual(b[0]["loss"], 6.0)
        self.assertIsNone(b[0]["mean_over"], "no loss function ran")
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
