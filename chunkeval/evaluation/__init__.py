"""The parts of an evaluation (evaluate.Evaluation): chunking, the caches' entries, ranking,
the retrievers' keeping and checking, the whole matrix."""
