"""Speed and memory benchmarks (README.md); run each as ``python -m benchmarks.<name>`` from
the repository root."""
