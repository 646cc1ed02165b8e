#!/usr/bin/env bash
# README command 2: install, build, and run every test (GPU tests skip themselves without a GPU).
# VERBATIM_FULL=1 adds the sanitizer stage (ASan+UBSan, TSan: scripts/ci-sanitize.sh) and the
# bounded libFuzzer stage (scripts/ci-fuzz.sh). They are opt-in until a clean-clone CI run of them
# has been timed on the 2-core CI machine (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
scripts/deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200)
echo "test.sh: build + tests took $(( $(date +%s) - t0 )) s"
if [ "${VERBATIM_FULL:-0}" = 1 ]; then
  scripts/ci-sanitize.sh
  scripts/ci-fuzz.sh
  echo "test.sh: everything took $(( $(date +%s) - t0 )) s"
fi
