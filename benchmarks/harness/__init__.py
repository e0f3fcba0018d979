"""The benchmark suite's harness: environments, inputs, probes, figures and reports."""
