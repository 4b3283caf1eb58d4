"""The memory: the knowledge graph, recall, the semantic layer, episodes, facts and history."""

import os

# numpy's products here are small and memory-bound, and OpenBLAS's worker threads only fight
# the embedding model's for the cores (bench/recall_scale.py, 20k nodes, 2 cores: a re-ranked
# long request p50 51 -> 30 ms with one BLAS thread). OpenBLAS reads this when numpy loads,
# and every Theus process imports this package before numpy. A user's own setting stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
