#!/usr/bin/env bash
# Install the package (once) and run the main job: the Figure 5.1 reproduction, panels A and B,
# at the small preset, both panels' simulations in one pool of two processes, longest first (the
# same numbers as one process). Extra arguments are passed on and win (e.g. --size full
# --panels ABC, or --jobs 1).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
exec .venv/bin/dpbandits reproduce fig5.1 --size small --panels AB --jobs 2 "$@"
