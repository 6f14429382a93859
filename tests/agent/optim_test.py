# SPDX-License-Identifier: MIT
# optim_test.py -- agent/glue/optim.py against real torch: a tiny training
# loop's step (pre with gradients, post), zero_grad, step(closure),
# clipping, an optimizer's load_state_dict, and its cover event (its tensors
# and the parameters holding gradients, at its first step).
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

    def test_cover_at_the_first_step_and_when_groups_change(self):
        m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
        opt = torch.optim.SGD(m[0].parameters(), lr=0.1)
        idx = glue.core._index(glue.core.S.optimizers, opt)
        x = torch.randn(8, 4)
        for _ in range(2):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        covers = tp.of("cover")
        self.assertEqual(len(covers), 1)  # the first step only
        c = covers[0]
        self.assertEqual((c["opt"], c["cls"]), (idx, "SGD"))
        self.assertEqual(c["params"], ["model.0.weight", "model.0.bias"])
        self.assertEqual(c["ids"], [id(p) for p in m[0].parameters()])
        self.assertEqual(c["groups"], [0, 0])
        self.assertEqual(c["shapes"], ["3x4", "3"])
        self.assertEqual(sorted(c["graded"]), sorted("model." + n for n, _ in m.named_parameters()))
        self.assertEqual(c["graded_shapes"][c["graded"].index("model.1.weight")], "2x3")
        # the cover event goes out just before the step's pre event
        kinds = [e[0] for e in tp.events if e[0] in ("cover", "step")]
        self.assertEqual(kinds[:2], ["cover", "step"])
        opt.add_param_group({"params": list(m[1].parameters())})
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()
        c = tp.of("cover")[-1]
        self.assertEqual(len(tp.of("cover")), 2)
        self.assertEqual(c["groups"], [0, 0, 1, 1])

    def test_cover_names_a_module_no_optimizer_holds_by_its_class(self):
        m = model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        import copy

        twin = copy.deepcopy(m)
        opt.zero_grad()
        twin(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        c = tp.of("cover")[-1]
        self.assertEqual(c["params"], ["model.weight", "model.bias"])
        self.assertEqual(c["graded"], ["<Linear>.weight", "<Linear>.bias"])
        self.assertEqual(tp.of("step")[0]["ngrads"], 0)

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
