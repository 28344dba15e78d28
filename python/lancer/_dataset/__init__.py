"""Internal dataset helpers at the paths pylance 14 has them (``lance._dataset``):
``sharded_batch_iterator.ShardedBatchIterator`` and ``cache.CachedDataset``."""
