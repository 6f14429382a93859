# SPDX-License-Identifier: MIT
# save_test.py -- agent/glue/save.py (and restore.py) against real torch:
# torch.save to a path and to a buffer, torch.load, the restore that
# follows naming that load, the snapshot at a save, pickling a tensor
# (not a checkpoint), safetensors where installed, and arming the
# interruption at TRAINPARITY_INTERRUPT_AT.
import gc
import io
import os
import pickle
import tempfile
import unittest

from glue_boot import boot, run, Interrupted

glue, tp = boot(interrupt_at=1)
import torch  # noqa: E402 -- after the glue, as under the agent


class SaveTest(unittest.TestCase):
    def setUp(self):
        tp.clear()
        self.dir = tempfile.mkdtemp()
        self.m = torch.nn.Linear(2, 2)
        self.opt = torch.optim.SGD(self.m.parameters(), lr=0.1)

    def tearDown(self):
        del self.m, self.opt  # the next test's model is the only one
        gc.collect()

    def test_save_load_restore(self):
        path = os.path.join(self.dir, "ckpt.pt")
        torch.save({"model": self.m.state_dict()}, path)
        s = tp.of("save")[0]
        self.assertEqual((s["api"], s["target"], s["name"]), ("torch", "path", path))
        self.assertEqual((s["via"], s["bytes"], s["error"]), ("file", os.path.getsize(path), None))
        self.assertEqual(len(s["digest"]), 16)
        ev = [e for e in tp.events if e[0] == "save"][0]
        self.assertEqual((ev[2], ev[4]), ("manifest", True))
        ck = torch.load(path)
        ld = tp.of("load")[0]
        self.assertEqual(ld["digest"], s["digest"])
        seq = len(tp.events) - 1
        self.m.load_state_dict(ck["model"])
        r = tp.of("restore")[-1]
        self.assertEqual((r["what"], r["obj"], r["load"]), ("module", "model", seq))

    def test_buffer(self):
        b = io.BytesIO()
        torch.save(self.m.state_dict(), b)
        s = tp.of("save")[0]
        self.assertEqual((s["target"], s["via"], s["bytes"]), ("buffer", "bytes", len(b.getvalue())))
        b.seek(0)
        torch.load(b)
        self.assertEqual(tp.of("load")[0]["digest"], s["digest"])

    def test_pickled_tensor_is_no_checkpoint(self):
        pickle.loads(pickle.dumps(torch.ones(3)))
        self.assertEqual(tp.of("save") + tp.of("load"), [])

    def test_failed_save_is_reported_and_raised(self):
        with self.assertRaises(Exception):
            torch.save(self.m.state_dict(), os.path.join(self.dir, "no", "such", "dir"))
        self.assertIsNotNone(tp.of("save")[0]["error"])
        self.assertEqual(tp.errors, [])

    def test_safetensors(self):
        try:
            import safetensors.torch as st
        except ImportError:
            self.skipTest("no safetensors here")
        path = os.path.join(self.dir, "m.safetensors")
        st.save_file({"w": torch.ones(2)}, path)
        st.load_file(path)
        self.assertEqual([e["api"] for e in tp.of("save") + tp.of("load")],
                         ["safetensors", "safetensors"])

    def test_zz_interrupt_at(self):
        """A save at or after step 1 arms the interruption, which happens at
        the next backward (here: the fake bridge's interrupt raises)."""
        while glue.core.S.step < 1:
            self.m(torch.ones(1, 2)).sum().backward()
            self.opt.step()
        torch.save(self.m.state_dict(), os.path.join(self.dir, "k.pt"))
        self.assertTrue(tp.of("save")[0]["armed"])
        self.assertEqual(tp.of("snapshot")[-1]["why"], "save", "a step's first save")
        with self.assertRaises(Interrupted):
            self.m(torch.ones(1, 2)).sum().backward()
        self.assertEqual(tp.interrupts, 1)


if __name__ == "__main__":
    run(globals())
