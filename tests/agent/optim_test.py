# SPDX-License-Identifier: MIT
# optim_test.py -- agent/glue/optim.py against real torch: a tiny training
# loop's step (pre with gradients, post), zero_grad, step(closure),
# clipping and an optimizer's load_state_dict.
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


def model():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2)


class OptimTest(unittest.TestCase):
    def setUp(self):
        tp.clear()

    def test_loop(self):
        m = model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        step0 = glue.core.S.step
        x = torch.randn(8, 4)
        for _ in range(3):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        steps = tp.of("step")
        self.assertEqual([s["phase"] for s in steps], ["pre", "post"] * 3)
        pre = steps[0]
        self.assertEqual((pre["cls"], pre["lrs"], pre["nparams"], pre["ngrads"], pre["via"]),
                         ("SGD", [0.1], 2, 2, "optimizer"))
        grads = [e for e in tp.events if e[0] == "step" and e[2] == "grads"][1]
        self.assertEqual([n for n, _ in grads[3]], ["grad.weight", "grad.bias"])
        self.assertEqual(glue.core.S.step, step0 + 3)
        self.assertEqual(tp.step, glue.core.S.step)
        zg = tp.of("zero_grad")
        self.assertEqual(len(zg), 3)
        self.assertEqual(zg[0]["which"], "optimizer")
        self.assertIsInstance(zg[0]["set_to_none"], bool)  # torch's default, whichever
        opt.zero_grad(set_to_none=False)
        self.assertEqual(tp.of("zero_grad")[-1]["set_to_none"], False)
        m.zero_grad()
        self.assertEqual(tp.of("zero_grad")[-1]["which"], "module")

    def test_closure_emits_pre_once_after_the_gradients(self):
        m = model()
        opt = torch.optim.LBFGS(m.parameters(), max_iter=3)
        x = torch.randn(8, 4)
        calls = []

        def closure():
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            calls.append(1)
            return loss

        opt.step(closure)
        self.assertGreater(len(calls), 1)
        steps = tp.of("step")
        self.assertEqual([s["phase"] for s in steps], ["pre", "post"])
        self.assertEqual(steps[0]["ngrads"], 2)

    def test_clip(self):
        m = model()
        m(torch.randn(8, 4)).sum().backward()
        n = torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        torch.nn.utils.clip_grad_value_(m.parameters(), clip_value=0.1)
        clips = tp.of("clip")
        self.assertEqual(clips[0], {"op": "norm", "max": 0.5, "norm": float(n)})
        self.assertEqual(clips[1], {"op": "value", "max": 0.1, "norm": None})

    def test_load_state_dict_is_a_restore(self):
        m = model()
        opt = torch.optim.Adam(m.parameters())
        opt.load_state_dict(opt.state_dict())
        r = tp.of("restore")[-1]
        self.assertEqual((r["what"], r["op"]), ("optimizer", "load_state_dict"))
        self.assertTrue(r["obj"].startswith("optimizer"))
        self.assertTrue(r["caller"].endswith("test_load_state_dict_is_a_restore"), r)
        self.assertTrue(tp.events[-1][4], "sent with a manifest of what was restored")

    def test_subclass_step_is_wrapped(self):
        class Mine(torch.optim.SGD):
            def step(self, closure=None):
                return super().step(closure)

        m = model()
        opt = Mine(m.parameters(), lr=0.1)
        m(torch.randn(2, 4)).sum().backward()
        opt.step()
        self.assertEqual([s["cls"] for s in tp.of("step")], ["Mine", "Mine"])
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
