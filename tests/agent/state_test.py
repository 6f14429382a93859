# SPDX-License-Identifier: MIT
# state_test.py -- agent/glue/state.py and modules.py against real torch:
# the snapshot of the training state, named as a checkpoint names it (a
# DataParallel wrapper's module by its own names; two trained models as
# model[0], model[1]), and restores naming a submodule.
import gc
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


def leaves(why="test"):
    tp.clear()
    glue.state._snapshot(why)
    kind, body, key, items, _ = tp.events[-1]
    return body, key, [p for p, _ in items], dict(items)


class StateTest(unittest.TestCase):
    def tearDown(self):
        gc.collect()

    def test_one_model(self):
        m = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(2, 2)))
        opt = torch.optim.Adam(m.parameters())
        sched = torch.optim.lr_scheduler.StepLR(opt, 1)
        m(torch.ones(1, 2)).sum().backward()
        opt.step()
        body, key, prefixes, items = leaves()
        self.assertEqual((body, key), ({"why": "test"}, "leaves"))
        self.assertEqual(prefixes, ["model", "model", "optimizer.state", "optimizer.group[0]",
                                    "scheduler", "rng.torch_cpu"])
        params = tp.events[-1][3][0][1]  # the wrapped module's names, not module.0.weight
        self.assertEqual(list(params), ["0.weight", "0.bias"])
        self.assertEqual(sorted(items["optimizer.state"]), ["0.bias", "0.weight"])
        self.assertNotIn("params", items["optimizer.group[0]"])
        m.module[0].load_state_dict(m.module[0].state_dict())
        self.assertEqual(tp.of("restore")[-1]["obj"], "model.0")
        del m, opt, sched

    def test_two_models(self):
        a, b = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        opt = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=1.0)
        _, _, prefixes, _ = leaves()
        self.assertEqual(prefixes[:4], ["model[0]", "model[0]", "model[1]", "model[1]"])
        self.assertEqual(len(glue.state._roots()), 2)
        del a, b, opt

    def test_unpickled_module_is_registered(self):
        import io
        import pickle

        n = len(glue.core.S.modules)
        pickle.load(io.BytesIO(pickle.dumps(torch.nn.Linear(1, 1))))
        self.assertGreaterEqual(len(glue.core.S.modules), n + 2)
        self.assertEqual(tp.errors, [])


if __name__ == "__main__":
    run(globals())
