"""Defaults the command line prints in its help, importable without the harness (so that
``dpbandits --help`` loads neither the agents nor the accountant)."""

#: replications when neither the config nor the command line says (a 95% band needs n > 1)
DEFAULT_N_REPS = 10
