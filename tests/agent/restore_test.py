# SPDX-License-Identifier: MIT
# restore_test.py -- agent/glue/restore.py (and modules.py's hook) against
# real torch: a module's load_state_dict is a restore event; one with
# strict=False that reported missing or unexpected keys also says how many
# keys it was given and how many it reported, the lists cut at 200.
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


def model():
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))


class RestoreTest(unittest.TestCase):
    def setUp(self):
        tp.clear()

    def test_load_state_dict_that_matched_is_plain(self):
        m = model()
        m.load_state_dict(model().state_dict())
        r = tp.of("restore")[-1]
        self.assertEqual((r["what"], r["op"]), ("module", "load_state_dict"))
        for k in ("missing", "unexpected", "keys", "nmissing", "nunexpected"):
            self.assertNotIn(k, r)
        self.assertTrue(tp.events[-1][4], "sent with a manifest of what was restored")

    def test_prefixed_keys_match_none(self):
        m = model()
        sd = {"_orig_mod." + k: v for k, v in model().state_dict().items()}
        m.load_state_dict(sd, strict=False)
        r = tp.of("restore")[-1]
        self.assertEqual(r["keys"], 4)
        self.assertEqual((r["nmissing"], r["nunexpected"]), (4, 4))
        self.assertEqual(r["missing"], ["0.weight", "0.bias", "2.weight", "2.bias"])
        self.assertEqual(r["unexpected"][0], "_orig_mod.0.weight")

    def test_lists_are_cut_the_counts_are_not(self):
        m = torch.nn.Sequential(*[torch.nn.Linear(1, 1) for _ in range(150)])
        m.load_state_dict({}, strict=False)
        r = tp.of("restore")[-1]
        self.assertEqual((r["keys"], r["nmissing"]), (0, 300))
        self.assertEqual(len(r["missing"]), 200)
        self.assertNotIn("unexpected", r)


if __name__ == "__main__":
    run(globals())
