"""``python -m experiments.real_data [run|norms|report] [--reps 20]``."""

from experiments.real_data.study import main

if __name__ == "__main__":
    raise SystemExit(main())
