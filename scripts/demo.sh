#!/usr/bin/env bash
# Install the package (once) and run the main job: the Figure 5.1 reproduction, panels A and B,
# at the small preset, panel B's agents in two processes (the same numbers as one process, about
# 15% less wall time on 2 cores). Extra arguments are passed on and win (e.g. --size full
# --panels ABC, or --jobs 1).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
exec .venv/bin/dpbandits reproduce fig5.1 --size small --panels AB --jobs 2 "$@"
