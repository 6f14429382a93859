# SPDX-License-Identifier: MIT
# sched_test.py -- agent/glue/sched.py against real torch: a `sched` event
# per user step (not the constructor's), ReduceLROnPlateau's metric, and a
# scheduler's load_state_dict.
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


class SchedTest(unittest.TestCase):
    def setUp(self):
        tp.clear()
        self.m = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.m.parameters(), lr=1.0)

    def train_step(self):
        self.opt.zero_grad()
        self.m(torch.ones(1, 2)).sum().backward()
        self.opt.step()

    def test_step_lr(self):
        s = torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5)
        self.assertEqual(tp.of("sched"), [], "the constructor's own step")
        for _ in range(2):
            self.train_step()
            s.step()
        ev = [e for e in tp.events if e[0] == "sched"]
        self.assertEqual(len(ev), 2)
        self.assertEqual(ev[0][1]["cls"], "StepLR")
        self.assertIsNone(ev[0][1]["metric"])
        prefix, state = ev[1][3][0]
        self.assertTrue(prefix.startswith("scheduler"))
        self.assertEqual(state["last_epoch"], 2)
        s.load_state_dict(s.state_dict())
        r = tp.of("restore")[-1]
        self.assertEqual((r["what"], r["op"]), ("scheduler", "load_state_dict"))

    def test_plateau_metric(self):
        s = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt)
        self.train_step()
        s.step(torch.tensor(1.5))
        self.assertEqual(tp.of("sched")[-1]["metric"], 1.5)
        self.assertEqual(tp.of("sched")[-1]["cls"], "ReduceLROnPlateau")
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
