# SPDX-License-Identifier: MIT
# dcp_test.py -- agent/glue/dcp.py against real torch: one
# torch.distributed.checkpoint save is one `save` event of a directory
# (api dcp, target dir, the digest of all its files), however many
# torch.save calls DCP makes inside it; a load is one `load` event, sent
# before the Stateful's load_state_dict restores that follow it; a save
# of other content has another digest.  Skipped where DCP is absent
# (torch 1.13).
import os
import tempfile
import unittest
import warnings

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent

try:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.stateful import Stateful
except ImportError:
    dcp = None
    Stateful = object

warnings.filterwarnings("ignore", message="torch.distributed is disabled")


class App(Stateful):
    def __init__(self, m, opt):
        self.m, self.opt, self.step = m, opt, 3

    def state_dict(self):
        return {"model": self.m.state_dict(), "sched": {"last_epoch": self.step}, "step": self.step}

    def load_state_dict(self, sd):
        self.m.load_state_dict(sd["model"])
        self.step = sd["step"]


@unittest.skipIf(dcp is None, "no torch.distributed.checkpoint here")
class DcpTest(unittest.TestCase):
    def setUp(self):
        tp.clear()
        self.dir = tempfile.mkdtemp()
        self.m = torch.nn.Linear(2, 2)
        self.opt = torch.optim.SGD(self.m.parameters(), lr=0.1)

    def test_one_save_one_load(self):
        path = os.path.join(self.dir, "step-3")
        dcp.save({"app": App(self.m, self.opt)}, checkpoint_id=path)
        saves = tp.of("save")
        self.assertEqual(len(saves), 1, saves)  # DCP's own torch.save calls are inside it
        s = saves[0]
        self.assertEqual((s["api"], s["target"], s["name"], s["via"]), ("dcp", "dir", path, "files"))
        self.assertEqual(len(s["digest"]), 16)
        size = sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))
        self.assertEqual(s["bytes"], size)
        ev = [e for e in tp.events if e[0] == "save"][0]
        names = [k for k, _ in ev[3]] if isinstance(ev[3], list) else None
        self.assertIsNotNone(names)
        m2 = torch.nn.Linear(2, 2)
        dcp.load({"app": App(m2, self.opt)}, checkpoint_id=path)
        loads = tp.of("load")
        self.assertEqual(len(loads), 1, loads)
        self.assertEqual((loads[0]["api"], loads[0]["digest"]), ("dcp", s["digest"]))
        kinds = [e[0] for e in tp.events]
        self.assertLess(kinds.index("load"), len(kinds) - 1 - kinds[::-1].index("restore"))
        self.assertTrue(torch.equal(m2.weight, self.m.weight))
        self.assertEqual(tp.errors, [])

    def test_other_content_other_digest(self):
        a, b = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        dcp.save({"app": App(self.m, self.opt)}, checkpoint_id=a)
        with torch.no_grad():
            self.m.weight.add_(1)
        dcp.save({"app": App(self.m, self.opt)}, checkpoint_id=b)
        d = [s["digest"] for s in tp.of("save")]
        self.assertEqual(len(d), 2)
        self.assertNotEqual(d[0], d[1])


run(globals())
