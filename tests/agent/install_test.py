# SPDX-License-Identifier: MIT
# install_test.py -- agent/glue/install.py and config.py: the boot order
# (each module of agent/CMakeLists.txt's list imports only modules before
# it), the generated body builders, the hooks installed when torch is
# imported after the boot, the `hello` event with the configuration, a
# module imported later (NumPy) patched on import, and the final snapshot
# and `bye` at exit.
import ast
import os
import subprocess
import sys
import unittest

from glue_boot import EVENTS, GLUE, boot, modules, run

glue, tp = boot(interrupt_at=5, capture="values")
import torch  # noqa: E402 -- after the glue, as under the agent


class InstallTest(unittest.TestCase):
    def test_boot_order(self):
        order = modules()
        self.assertEqual((order[0], order[-1]), ("__init__", "install"))
        # every module of agent/glue, and events, generated from proto/events.def
        self.assertEqual(sorted(order), sorted([f[:-3] for f in os.listdir(GLUE) if f.endswith(".py")] +
                                               ["events"]))
        for i, name in enumerate(order):
            path = EVENTS if name == "events" else os.path.join(GLUE, name + ".py")
            with open(path) as f:
                tree = ast.parse(f.read())
            for n in ast.walk(tree):
                if isinstance(n, ast.ImportFrom) and n.level:
                    for m in [n.module] if n.module else [a.name for a in n.names]:
                        self.assertIn(m, order[1:i], "%s imports %s, not before it" % (name, m))

    def test_builders(self):
        """The body builders events.def generates: optional keys left out
        unless given, a key it does not declare or a required one missing
        is a TypeError where the body is written."""
        ev = glue.events
        self.assertEqual(ev.step("post", 0, "SGD"), {"phase": "post", "opt": 0, "cls": "SGD"})
        self.assertEqual(ev.step("post", 0, "SGD", unorm=None), {"phase": "post", "opt": 0, "cls": "SGD",
                                                                  "unorm": None})
        with self.assertRaises(TypeError):
            ev.step("post", 0, "SGD", unrom=1.0)
        with self.assertRaises(TypeError):
            ev.backward(loss=1.0)  # count is required
        self.assertEqual(ev.KEYS["save"], ev.KEYS["load"])  # one body
        self.assertIn("leaves", ev.REQUIRED["snapshot"])  # filled by emit's items

    def test_no_literal_bodies(self):
        """No glue module hands emit a dict literal: every body goes
        through a builder."""
        for name in modules():
            if name == "events":
                continue
            with open(os.path.join(GLUE, name + ".py")) as f:
                tree = ast.parse(f.read())
            for n in ast.walk(tree):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                        n.func.attr == "emit" and len(n.args) > 1):
                    self.assertNotIsInstance(n.args[1], ast.Dict, "%s.py:%d" % (name, n.lineno))

    def test_config(self):
        cfg = glue.config._cfg
        self.assertEqual((cfg["interrupt_at"], cfg["capture"], cfg["sample_id"]), (5, "values", None))

    def test_hello(self):
        h = tp.of("hello")
        self.assertEqual(len(h), 1)
        h = h[0]
        # the agent reports the bridge's version (the real one: CMake's project())
        self.assertEqual((h["schema"], h["agent"], h["torch"]), (1, tp.version, str(torch.__version__)))
        self.assertEqual((h["interrupt_at"], h["capture"], h["role"]), (5, "values", "main"))
        self.assertIs(glue.core.S.torch, torch)

    def test_hooks_installed(self):
        wrapped = glue.core._is_wrapped
        for f in (torch.save, torch.load, torch.Tensor.backward, torch.autograd.backward,
                  torch.optim.Optimizer.__init__, torch.optim.Optimizer.zero_grad,
                  torch.nn.Module.__init__, torch.nn.Module.load_state_dict, torch.manual_seed,
                  torch.utils.data.DataLoader.__iter__, torch.nn.utils.clip_grad_norm_):
            self.assertTrue(wrapped(f), f)
        self.assertFalse(wrapped(torch.nn.functional.dropout), "disable_dropout is off")
        self.assertFalse(wrapped(torch.nn.functional.cross_entropy), "loss_counts is off")
        self.assertEqual(tp.errors, [])

    def test_numpy_after_boot(self):
        try:
            import numpy.random as npr
        except ImportError:
            self.skipTest("no numpy here")
        self.assertTrue(glue.core._is_wrapped(npr.seed))

    def test_exit(self):
        """A child that boots, trains a step and exits: final snapshot, bye."""
        code = ("import sys; sys.path.insert(0, %r)\n"
                "from glue_boot import boot\n"
                "import atexit\n"
                "atexit.register(lambda: print([e[0] for e in tp.events][-2:], tp.byes))\n"
                "glue, tp = boot()  # its exit hook runs before the print\n"
                "import torch\n"
                "m = torch.nn.Linear(1, 1); o = torch.optim.SGD(m.parameters(), lr=1.0)\n"
                "m(torch.ones(1, 1)).sum().backward(); o.step()\n" % os.path.dirname(__file__))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "['step', 'snapshot'] [('exit', None, None)]")


if __name__ == "__main__":
    run(globals())
