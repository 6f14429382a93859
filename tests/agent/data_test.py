# SPDX-License-Identifier: MIT
# data_test.py -- agent/glue/data.py against real torch: the `batch` events
# of a DataLoader's epochs (the sampler's indices, position, epoch, the end
# mark), what counts as a sample ID, and --sample-id's expression.
import unittest

from glue_boot import boot, run

glue, tp = boot()
import torch  # noqa: E402 -- after the glue, as under the agent
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

data = glue.data


class LoaderTest(unittest.TestCase):
    def setUp(self):
        tp.clear()

    def test_epochs(self):
        ds = TensorDataset(torch.arange(10.0), torch.arange(10))
        dl = DataLoader(ds, batch_size=4)
        for _ in range(2):
            for batch in dl:
                pass
        ev = tp.of("batch")
        got = [(b["epoch"], b["pos"], b["ids"], b.get("end", False)) for b in ev]
        self.assertEqual(got, [(0, 0, [0, 1, 2, 3], False), (0, 1, [4, 5, 6, 7], False),
                               (0, 2, [8, 9], False), (0, 3, None, True),
                               (1, 0, [0, 1, 2, 3], False), (1, 1, [4, 5, 6, 7], False),
                               (1, 2, [8, 9], False), (1, 3, None, True)])
        b = ev[0]
        self.assertEqual((b["sampler"], b["dataset_len"], b["total_size"], b["drop_last"]),
                         ("SequentialSampler", 10, None, False))
        self.assertEqual((b["id_source"], b["size"], b["worker"]), ("sampler", 4, None))
        self.assertEqual((b["rank"], b["world"]), glue.dist._rank_world())

    def test_batch_sampler_shard(self):
        """accelerate's BatchSamplerShard says how it deals the batches, so
        the coverage check can infer its even_batches padding."""
        try:
            from accelerate.data_loader import BatchSamplerShard
        except ImportError:
            self.skipTest("no accelerate for this Python")
        ds = TensorDataset(torch.arange(13.0))
        inner = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(ds), 4, False)
        dl = DataLoader(ds, batch_sampler=BatchSamplerShard(inner, num_processes=2, process_index=1))
        for _ in dl:  # (the events say what the loader is while it is alive)
            pass
        ev = tp.of("batch")
        # rank 1 of 2 takes batches 1 and 3; 3 holds 12 and the first 3
        self.assertEqual([b["ids"] for b in ev], [[4, 5, 6, 7], [12, 0, 1, 2], None])
        self.assertEqual({k: ev[0][k] for k in ("sampler", "shard", "shard_batch", "shard_ranks",
                                                "shard_even", "shard_drop_last")},
                         {"sampler": "SequentialSampler", "shard": "batches", "shard_batch": 4,
                          "shard_ranks": 2, "shard_even": True, "shard_drop_last": False})
        for _ in DataLoader(ds, batch_size=4):  # no shard: no shard keys
            pass
        self.assertNotIn("shard", tp.of("batch")[-1])

    def test_sample_id_expression(self):
        ds = TensorDataset(torch.arange(4.0), torch.tensor([10, 11, 12, 13]))
        saved = data._SAMPLE_ID, data._SAMPLE_ID_CODE
        data._SAMPLE_ID, data._SAMPLE_ID_CODE = "batch[1]", None
        try:
            for _ in DataLoader(ds, batch_size=2):
                pass
        finally:
            data._SAMPLE_ID, data._SAMPLE_ID_CODE = saved
        ev = [b for b in tp.of("batch") if not b.get("end")]
        self.assertEqual([(b["ids"], b["id_source"]) for b in ev], [([10, 11], "expr"), ([12, 13], "expr")])


class IdsTest(unittest.TestCase):
    def test_ids(self):
        self.assertEqual(data._ids_list(torch.tensor([3, 4])), [3, 4])
        self.assertEqual(data._ids_list(["a", "b"]), ["a", "b"])
        self.assertEqual(data._ids_list(7), [7])
        for bad in ([1.5], [True], [1, "a"], ["x" * 2000]):
            with self.assertRaises((TypeError, ValueError)):
                data._ids_list(bad)
        self.assertIsNone(data._ids_of([0.5]))


if __name__ == "__main__":
    run(globals())
