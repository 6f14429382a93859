# SPDX-License-Identifier: MIT
# optim_test.py -- agent/glue/optim.py against real torch: a tiny training
# loop's step (pre with gradients, post), zero_grad, step(closure),
# clipping, an optimizer's load_state_dict, and its cover event (its tensors
# and the parameters holding gradients, at its first step, and again when a
# parameter first holds a gradient later: one unfrozen).
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

    def unfrozen(self, add):
        """An embedding frozen at the start and unfrozen at step 3 (added to
        the optimizer then when add), 5 steps; the covers and the
        embedding's weight before and after."""

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(10, 4)
                self.head = torch.nn.Linear(4, 2)

            def forward(self, x):
                return self.head(self.emb(x).mean(1))

        torch.manual_seed(0)
        m = Net()
        m.emb.requires_grad_(False)
        opt = torch.optim.SGD(m.head.parameters(), lr=0.1)
        x = torch.randint(0, 10, (8, 3))
        covers, before = [], None
        for step in range(5):
            if step == 3:
                m.emb.requires_grad_(True)
                before = m.emb.weight.detach().clone()
                if add:
                    opt.add_param_group({"params": [m.emb.weight]})
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
            covers.append(len(tp.of("cover")))
        return m, covers, before

    def test_cover_again_when_a_parameter_first_holds_a_gradient(self):
        m, covers, before = self.unfrozen(add=False)
        # one at the first step, one at step 3 (the embedding's first gradient), no more
        self.assertEqual(covers, [1, 1, 1, 2, 2])
        c = tp.of("cover")[-1]
        self.assertEqual(c["params"], ["model.head.weight", "model.head.bias"])
        self.assertIn("model.emb.weight", c["graded"])
        self.assertNotIn("model.emb.weight", tp.of("cover")[0]["graded"])
        kinds = [e[0] for e in tp.events if e[0] in ("cover", "step")]
        self.assertEqual(kinds[7:9], ["cover", "step"])  # just before step 3's pre event
        # the agent changed nothing: the embedding, in no optimizer, never moved
        self.assertTrue(torch.equal(m.emb.weight, before))
        self.assertEqual(tp.errors, [])

    def test_one_cover_when_the_unfrozen_parameter_is_added(self):
        m, covers, before = self.unfrozen(add=True)
        self.assertEqual(covers, [1, 1, 1, 2, 2])  # add_param_group and the gradient: one
        c = tp.of("cover")[-1]
        self.assertEqual(c["params"], ["model.head.weight", "model.head.bias", "model.emb.weight"])
        self.assertIn("model.emb.weight", c["graded"])
        self.assertFalse(torch.equal(m.emb.weight, before))
        self.assertEqual(tp.errors, [])

    def test_nothing_looked_at_once_every_parameter_held_a_gradient(self):
        m = model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        opt.zero_grad()
        m(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        live = {id(p) for p in m.parameters()}
        G = glue.optim._Graded
        self.assertFalse([r for r in G.unseen if id(r()) in live])
        self.assertTrue(live <= set(G.seen))
        key = G.key
        opt.step()
        self.assertIs(G.key, key)  # the list is not made again while nothing changes
        self.assertEqual(len(tp.of("cover")), 1)

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
