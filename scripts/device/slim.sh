#!/usr/bin/env bash
# Runs HERE. `run` copies the working tree (tracked files) plus the carry, 64 MiB in all; the
# tracked tree is ~44 MB, 33 of them bench/results, which no device script reads. So for a call
# whose carry is large (several CUDA binaries): `scripts/device/slim.sh hide` before `run`,
# `scripts/device/slim.sh restore` right after (before any git command that stages files).
set -euo pipefail
cd "$(dirname "$0")/../.."
HOLD=/tmp/vb_results_hold
case "${1:-}" in
  hide) [ -d bench/results ] && [ ! -e $HOLD ] && mv bench/results $HOLD && echo "bench/results -> $HOLD" ;;
  restore) [ -d $HOLD ] && [ ! -e bench/results ] && mv $HOLD bench/results && echo "bench/results restored" ;;
  *) echo "usage: slim.sh hide|restore" >&2; exit 2 ;;
esac
