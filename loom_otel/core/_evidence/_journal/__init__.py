"""The audit journal: the hash-chained writer, its one reader, checkpoints, record parsing."""
