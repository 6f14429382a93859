# SPDX-License-Identifier: MIT
# dist_test.py -- agent/glue/dist.py against real torch: the launcher's
# rank and world (as torchrun sets them), in `hello` and batch events, and
# torch.distributed's once it is initialised.
import os
import tempfile
import unittest

os.environ.update(RANK="3", WORLD_SIZE="4", LOCAL_RANK="1")
from glue_boot import boot, run  # noqa: E402

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent


class DistTest(unittest.TestCase):
    def test_launcher(self):
        h = tp.of("hello")[0]
        self.assertEqual((h["rank"], h["world"], h["local_rank"]), (3, 4, 1))
        self.assertEqual(glue.dist._rank_world(), (3, 4))
        os.environ["RANK"] = "x"
        try:
            self.assertEqual(glue.dist._launcher(), (-1, 4, 1))
        finally:
            os.environ["RANK"] = "3"

    def test_zz_initialised(self):
        d = torch.distributed
        if not d.is_available():
            self.skipTest("no torch.distributed here")
        f = tempfile.NamedTemporaryFile(delete=False)
        f.close()
        d.init_process_group("gloo", init_method="file://" + f.name, rank=0, world_size=1)
        try:
            self.assertEqual(glue.dist._rank_world(), (0, 1))
        finally:
            d.destroy_process_group()


if __name__ == "__main__":
    run(globals())
