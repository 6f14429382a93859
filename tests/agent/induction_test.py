# SPDX-License-Identifier: MIT
# induction_test.py -- agent/glue/state.py's induction mode against real
# torch: which start-of-step snapshots are full (the first, the first after
# a save, a load or a restore, every full_every-th step, the steps of
# full_from..full_to) and what a light one leaves out (the model's
# parameters and buffers, the optimizer's state); and that without the
# mode every snapshot is full.
import io
import unittest

from glue_boot import boot, run

glue, tp = boot(induction=True, full_every=5, full_from=6, full_to=6)
import torch  # noqa: E402 -- after the glue, as under the agent

cfg = glue.config._cfg  # the glue's configuration, as _tp.config() gave it


def train(steps, save_after=None, restore_before=None):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    tp.clear()
    for s in range(steps):
        if s == restore_before:
            m.load_state_dict(m.state_dict())
        opt.zero_grad()
        m(torch.randn(5, 3)).sum().backward()
        opt.step()
        if s + 1 == save_after:
            torch.save(m.state_dict(), io.BytesIO())
    snaps = [e for e in tp.events if e[0] == "snapshot" and e[1]["why"] == "backward"]
    return [(e[1].get("full", True), [name for name, _ in e[3]]) for e in snaps]


class InductionTest(unittest.TestCase):
    def test_boundaries(self):
        snaps = train(9, save_after=4, restore_before=8)
        full = [s for s, (f, _) in enumerate(snaps) if f]
        # 0: the first; 4: after the save; 5: every 5th; 6: the window; 8: after the restore
        self.assertEqual(full, [0, 4, 5, 6, 8])
        for f, names in snaps:
            has_state = "model" in names and "optimizer.state" in names
            self.assertEqual(has_state, f, names)
            self.assertIn("optimizer.group[0]", names)
            self.assertIn("rng.torch_cpu", names)
        self.assertEqual(tp.errors, [])

    def test_grads_every_step(self):
        train(4)
        pre = [e for e in tp.events if e[0] == "step" and e[1]["phase"] == "pre"]
        self.assertEqual(len(pre), 4)
        for e in pre:
            self.assertEqual(len(e[3]), 4, "every gradient, at every step")

    def test_off(self):
        cfg["induction"] = False
        try:
            snaps = train(4)
        finally:
            cfg["induction"] = True
        self.assertEqual([f for f, _ in snaps], [True] * 4)


if __name__ == "__main__":
    run(globals())
