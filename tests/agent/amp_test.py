# SPDX-License-Identifier: MIT
# amp_test.py -- agent/glue/amp.py against real torch: a GradScaler's
# scale, unscale_, step and update; a step it skips (inf gradients) as a
# skipped optimizer step; its load_state_dict.  An enabled scaler needs
# torch.amp.GradScaler on the CPU (torch 2.x); elsewhere a disabled one.
import unittest
import warnings

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


def cpu_scaler():
    G = getattr(getattr(torch, "amp", None), "GradScaler", None)
    if G is None:
        return None
    try:
        s = G("cpu", init_scale=4.0)
    except Exception:
        return None
    return s if s.is_enabled() else None


class AmpTest(unittest.TestCase):
    def setUp(self):
        tp.clear()
        self.m = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.m.parameters(), lr=0.1)

    def loop(self, scaler, x):
        scaler.scale(self.m(x).sum()).backward()
        scaler.unscale_(self.opt)
        scaler.step(self.opt)
        scaler.update()

    def test_enabled(self):
        scaler = cpu_scaler()
        if scaler is None:
            self.skipTest("no GradScaler on the CPU in this torch")
        self.loop(scaler, torch.ones(1, 2))
        ops = [a["op"] for a in tp.of("amp")]
        self.assertEqual(ops, ["scale", "unscale", "step", "update"])
        self.assertEqual(tp.of("amp")[0]["scale"], 4.0)
        self.assertEqual(tp.of("amp")[2]["found_inf"], False)
        self.assertEqual([s["via"] for s in tp.of("step") if s["phase"] == "pre"], ["scaler"])
        tp.clear()
        self.loop(scaler, torch.tensor([[float("inf"), 1.0]]))
        steps = tp.of("step")
        self.assertEqual([(s["phase"], s.get("skipped")) for s in steps], [("pre", True), ("post", True)])
        self.assertEqual(tp.of("amp")[2], {"op": "step", "found_inf": True, "opt": steps[0]["opt"]})

    def test_backward_says_whether_its_tensor_was_scaled(self):
        scaler = cpu_scaler()
        if scaler is None:
            self.skipTest("no GradScaler on the CPU in this torch")
        self.loop(scaler, torch.ones(1, 2))
        self.assertEqual(tp.of("backward")[-1]["scaled"], True)
        loss = self.m(torch.ones(1, 2)).sum()
        scaler.scale(loss)  # its output not used
        loss.backward()
        self.assertEqual(tp.of("backward")[-1]["scaled"], False)

    def test_disabled(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scaler = torch.cuda.amp.GradScaler(enabled=False)
        self.loop(scaler, torch.ones(1, 2))
        self.assertEqual(tp.of("amp"), [])
        self.assertEqual([s["phase"] for s in tp.of("step")], ["pre", "post"])
        scaler.load_state_dict(scaler.state_dict())
        r = tp.of("restore")[-1]
        self.assertEqual((r["what"], r["op"]), ("scaler", "load_state_dict"))
        self.assertTrue(r["obj"].startswith("scaler"))
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
