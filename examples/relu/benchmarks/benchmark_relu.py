"""Benchmarks of the example kernel, in the format of `kernels benchmark`.

Run with `kernel-plugins benchmark ./examples/relu --scripts` (or `kernels benchmark
./examples/relu`). Each `benchmark_<workload>` is timed after its `setup_<workload>`;
`verify_<workload>` returns what `self.out` must hold.
"""

import torch

from kernels.benchmark import Benchmark


class ReluBenchmark(Benchmark):
    seed = 0

    def setup_small(self):
        self.x = torch.randn(16, 256, device=self.device)
        self.out = torch.empty_like(self.x)

    def benchmark_small(self):
        self.kernel.relu(self.out, self.x)

    def verify_small(self):
        return torch.relu(self.x)

    def setup_large(self):
        self.x = torch.randn(64, 1024, device=self.device)
        self.out = torch.empty_like(self.x)

    def benchmark_large(self):
        self.kernel.relu(self.out, self.x)

    def verify_large(self):
        return torch.relu(self.x)
