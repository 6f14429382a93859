# SPDX-License-Identifier: MIT
# core_test.py -- agent/glue/core.py: the wrapping machinery (after-hooks,
# the re-entry guard, a hook's own failure kept from user code, a forked
# child and an agent standing aside left alone) and the registries' naming.
import os
import types
import unittest

from glue_boot import boot, run

glue, tp = boot()
core = glue.core


class WrapTest(unittest.TestCase):
    def setUp(self):
        tp.clear()
        self.seen = []
        self.mod = types.ModuleType("m")

    def wrap(self, fn, after=None, cat="t"):
        self.mod.f = fn
        core._wrap_function(self.mod, "f", after or (lambda r, a, k: self.seen.append((r, a, k))), cat)
        return self.mod.f

    def test_after_sees_result_and_arguments(self):
        f = self.wrap(lambda x, y=0: x + y)
        self.assertEqual(f(1, y=2), 3)
        self.assertEqual(self.seen, [(3, (1,), {"y": 2})])
        self.assertTrue(core._is_wrapped(f))
        self.assertIsNone(core._wrap_function(self.mod, "f", None, "t") and None)
        self.assertIs(self.mod.f, f, "wrapping twice")

    def test_reentry_is_observed_once(self):
        def outer(n):
            return n if n == 0 else self.mod.f(n - 1)

        f = self.wrap(outer)
        self.assertEqual(f(3), 0)
        self.assertEqual(len(self.seen), 1)

    def test_hook_failure_never_reaches_user_code(self):
        def bad(r, a, k):
            raise RuntimeError("hook bug")

        f = self.wrap(lambda: 5, bad)
        self.assertEqual(f(), 5)
        self.assertEqual(len(tp.errors), 1)
        self.assertEqual(tp.errors[0][0], "m.f")
        self.assertIn("hook bug", tp.errors[0][1])

    def test_user_exception_passes_through(self):
        def raises():
            raise KeyError("mine")

        f = self.wrap(raises)
        with self.assertRaises(KeyError):
            f()
        self.assertEqual(self.seen, [])
        self.assertEqual(core._depth("t"), 0)

    def test_forked_child_is_not_observed(self):
        f = self.wrap(lambda: 1)
        pid = core.S.pid
        core.S.pid = pid + 1
        try:
            self.assertEqual(f(), 1)
        finally:
            core.S.pid = pid
        self.assertEqual(self.seen, [])
        self.assertEqual(core.S.pid, os.getpid())

    def test_aside_is_not_observed(self):
        f = self.wrap(lambda: 1)
        core.S.aside = True
        try:
            self.assertEqual(f(), 1)
        finally:
            core.S.aside = False
        self.assertEqual(self.seen, [])
        self.assertEqual(f(), 1)
        self.assertEqual(len(self.seen), 1, "observed again once no longer aside")

    def test_wrap_method(self):
        class C:
            def m(self, x):
                return x * 2

        core._wrap_method(C, "m", lambda s, r, a, k: self.seen.append(r))
        self.assertEqual(C().m(4), 8)
        self.assertEqual(self.seen, [8])
        self.assertEqual(C.m.__name__, "m")


class RegistryTest(unittest.TestCase):
    def test_index_and_names(self):
        class O:
            pass

        refs, a, b = [], O(), O()
        self.assertEqual((core._index(refs, a), core._index(refs, b), core._index(refs, a)), (0, 1, 0))
        self.assertEqual(core._indexed("optimizer", 0, 1), "optimizer")
        self.assertEqual(core._indexed("optimizer", 1, 2), "optimizer[1]")
        del a
        self.assertEqual(core._live(refs), [b])

    def test_arg0(self):
        self.assertEqual(core._arg0((1,), {}, "k"), 1)
        self.assertEqual(core._arg0((), {"k": 2}, "k"), 2)

    def test_caller_skips_the_glue(self):
        """A hook's caller is the first frame outside the glue: here, this
        test, through the wrapper and the hook (both glue frames)."""
        mod, seen = types.ModuleType("m"), []
        mod.f = lambda: None
        g = dict(vars(core), seen=seen)  # a hook defined in the glue
        exec("def after(r, a, k):\n    seen.append(_caller())\n", g)
        core._wrap_function(mod, "f", g["after"], "t")
        mod.f()
        self.assertEqual(seen[0].split(".")[0], "__main__")
        self.assertTrue(seen[0].endswith("test_caller_skips_the_glue"), seen)

if __name__ == "__main__":
    run(globals())
