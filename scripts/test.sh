#!/usr/bin/env bash
# README command 2: install, build, and run every test (GPU tests skip themselves without a GPU).
# Then, unless VERBATIM_QUICK=1: the sanitizer stage (ASan+UBSan, TSan) and the bounded fuzz stage.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
scripts/deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200)
echo "test.sh: build + tests took $(( $(date +%s) - t0 )) s"
if [ "${VERBATIM_QUICK:-0}" != 1 ]; then
  scripts/ci-sanitize.sh
  scripts/ci-fuzz.sh
  echo "test.sh: everything took $(( $(date +%s) - t0 )) s"
fi
