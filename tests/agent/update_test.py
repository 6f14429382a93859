# SPDX-License-Identifier: MIT
# update_test.py -- agent/glue/optim.py's update measurement under health's
# configuration: TRAINPARITY_UPDATE_NORM=1 with TRAINPARITY_UPDATE_EVERY=2
# (health --every 2) measures the update (the post event's unorm and
# changed) at the steps that are multiples of 2 only.
import unittest

from glue_boot import boot

glue, tp = boot(update_norm=True, update_every=2)
import torch  # noqa: E402 -- after the glue, as under the agent


class UpdateEveryTest(unittest.TestCase):
    def test_every_second_step(self):
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x = torch.randn(8, 4)
        first = glue.core.S.step
        for _ in range(5):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        post = [s for s in tp.of("step") if s["phase"] == "post"]
        self.assertEqual(len(post), 5)
        want = [(first + k) % 2 == 0 for k in range(5)]
        self.assertEqual(["unorm" in s for s in post], want)
        self.assertEqual(["changed" in s for s in post], want)


if __name__ == "__main__":
    unittest.main()
