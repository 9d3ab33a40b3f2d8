#!/usr/bin/env bash
# Install the package (once) and run the main job: the Figure 5.1 reproduction, panels A and B,
# at the small preset. Extra arguments are passed on (e.g. --size full --panels ABC --jobs 2).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
exec .venv/bin/dpbandits reproduce fig5.1 --size small --panels AB "$@"
