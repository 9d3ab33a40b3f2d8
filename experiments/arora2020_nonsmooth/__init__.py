"""See README.md; one BLAS thread (set before numpy is imported)."""

from experiments import single_thread_blas

single_thread_blas()
