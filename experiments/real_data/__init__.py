"""Private agents on real supervised-to-bandit data; see README.md and study.py."""

from experiments import single_thread_blas

single_thread_blas()
