#!/usr/bin/env bash
# README command 1: install, build, and generate with the embedded default model (CPU, random weights).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
printf '%s\n' '{"prompt": "The capital of France is", "max_tokens": 16, "temperature": 0}' \
              '{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0.8, "seed": 7}' |
  build/verbatim generate
