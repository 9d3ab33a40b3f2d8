#!/usr/bin/env bash
# Install the package (once) and run the main job.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
exec .venv/bin/dpbandits demo "$@"
