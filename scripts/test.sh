#!/usr/bin/env bash
# README command 2: install, build, and run every test (GPU tests skip themselves without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200
