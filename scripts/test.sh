#!/usr/bin/env bash
# README command 2: install, build, and run every test (GPU tests skip themselves without a GPU),
# then the same tests again under sanitizers (ASan+UBSan, TSan: scripts/ci-sanitize.sh) and a
# bounded libFuzzer run of every fuzz target (scripts/ci-fuzz.sh). CI runs exactly this.
#   VERBATIM_QUICK=1          local shortcut: the plain suite only (no sanitizer, no fuzz stage)
#   VERBATIM_BUILD_PREFIX=P   sanitizer/fuzz build folders P{asan,tsan,fuzz} (default build-)
# After the build, every stage runs even when an earlier one failed (one CI run shows every failure); the exit
# status is 1 when any stage failed. Each stage's wall time is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
t_all=$(date +%s)
failed=()
timings=()

stage() {  # stage NAME COMMAND...: runs it, records its wall time and whether it failed
  local name=$1 t0 rc=0; shift
  t0=$(date +%s)
  echo "test.sh: === $name ==="
  "$@" || rc=$?
  timings+=("$(printf '%-10s %5d s  %s' "$name" $(( $(date +%s) - t0 )) "$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")")")
  [ $rc -eq 0 ] || failed+=("$name")
  return $rc
}

stage deps scripts/deps.sh || { echo "test.sh: dependencies failed"; exit 1; }
stage build scripts/build.sh || { printf '%s\n' "${timings[@]}"; exit 1; }
stage tests bash -c 'cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200'
if [ "${VERBATIM_QUICK:-0}" != 1 ]; then
  stage asan env SANITIZE_ONLY=asan scripts/ci-sanitize.sh
  stage tsan env SANITIZE_ONLY=tsan scripts/ci-sanitize.sh
  stage fuzz scripts/ci-fuzz.sh
else
  echo "test.sh: VERBATIM_QUICK=1: sanitizer and fuzz stages skipped"
fi

echo "test.sh: stage times (wall):"
printf '  %s\n' "${timings[@]}"
echo "test.sh: everything took $(( $(date +%s) - t_all )) s"
if ((${#failed[@]})); then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all stages passed"
