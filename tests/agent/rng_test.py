# SPDX-License-Identifier: MIT
# rng_test.py -- agent/glue/rng.py against real torch: seeds and set states
# of torch's, Python's and NumPy's generators as restore events, and the
# seeded ones in the snapshot.
import random
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


class RngTest(unittest.TestCase):
    def setUp(self):
        tp.clear()

    def restores(self):
        return [(r["obj"], r["op"], r.get("seed")) for r in tp.of("restore")]

    def test_torch(self):
        torch.manual_seed(7)
        torch.random.manual_seed(8)
        torch.set_rng_state(torch.get_rng_state())
        self.assertEqual(self.restores(), [("rng.torch_cpu", "seed", 7), ("rng.torch_cpu", "seed", 8),
                                           ("rng.torch_cpu", "set_state", None)])
        self.assertTrue(tp.events[-1][4], "the state set is sent as a manifest")
        self.assertEqual(tp.of("restore")[0]["what"], "rng")

    def test_python(self):
        random.seed(5)
        random.setstate(random.getstate())
        self.assertEqual(self.restores(), [("rng.python", "seed", 5), ("rng.python", "set_state", None)])
        leaf = tp.events[-1][3][0][1]
        self.assertIsInstance(leaf, glue.core.Digest)
        self.assertTrue(glue.core.S.seeded["python"])

    def test_numpy(self):
        try:
            import numpy.random as npr
        except ImportError:
            self.skipTest("no numpy here")
        npr.seed(3)
        self.assertEqual(self.restores(), [("rng.numpy", "seed", 3)])

    def test_snapshot_holds_the_seeded(self):
        random.seed(1)
        m = torch.nn.Linear(1, 1)
        opt = torch.optim.SGD(m.parameters(), lr=1.0)
        glue.core.S.snap_step = -1
        m(torch.ones(1, 1)).sum().backward()
        snap = [e for e in tp.events if e[0] == "snapshot"][-1]
        names = [p for p, _ in snap[3]]
        self.assertIn("rng.torch_cpu", names)
        self.assertIn("rng.python", names)
        del opt
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
