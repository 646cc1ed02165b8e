#!/usr/bin/env python3
"""Step 1 of 2 for unicode_tables.cpp: asks HF `tokenizers` itself how the Qwen3 tokenizer.json
treats every code point, by behaviour only (piece counts and normalized strings):

  * the split regex's \\p{L}, \\p{N} and \\s (Oniguruma 6.9.10 in tokenizers 0.23: Unicode 16.0),
  * the (?i:'s|'t|...) contraction alternative on non-ASCII letters,
  * the NFC normalizer (unicode-normalization-alignments: Unicode 9.0 tables), through canonical
    reordering probes and re-composition of every canonical decomposition this Python knows.

Run where `tokenizers` is installed (the reference machine):
    python3 probe_hf.py TOKENIZER_DIR/tokenizer.json > hf_unicode_probe.json
then make_tables.py turns the answer into C++ tables.
"""
import json
import sys
import time
import unicodedata

import tokenizers
from tokenizers import Tokenizer


def ranges(cps):
    out = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def main():
    t0 = time.time()
    tok = Tokenizer.from_file(sys.argv[1])
    pre, norm = tok.pre_tokenizer, tok.normalizer
    pieces = lambda s: len(pre.pre_tokenize_str(s))
    letters, other, space, contraction = [], [], [], []
    reorder_after, reorder_before, decomposed = [], [], []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        # "a"+c is one piece only through \p{L}+; c+"!" only through [^\s\p{L}\p{N}]+; c+" " only through \s+.
        is_letter = pieces("a" + c) == 1
        if is_letter:
            letters.append(cp)
            if pieces("'" + c + "x") == 2:  # "'c" split off by the contraction alternative
                contraction.append(cp)
        if pieces(c + "!") == 1:
            other.append(cp)
        if pieces(c + " ") == 1:
            space.append(cp)
        # Canonical reordering: U+0334 has ccc 1, U+0301 ccc 230; either probe moves c iff HF knows its ccc.
        s = "x" + c + "\u0334"
        if norm.normalize_str(s) != s:
            reorder_after.append(cp)
        s = "x\u0301" + c
        if norm.normalize_str(s) != s:
            reorder_before.append(cp)
        d = unicodedata.normalize("NFD", c)
        if d != c:
            decomposed.append([cp, d, norm.normalize_str(d), norm.normalize_str(c)])
    json.dump({
        "tokenizers": tokenizers.__version__, "python_unicodedata": unicodedata.unidata_version,
        "letters": ranges(letters), "other": ranges(other), "space": ranges(space), "contraction": contraction,
        "reorder_after": ranges(reorder_after), "reorder_before": ranges(reorder_before), "decomposed": decomposed,
        "seconds": round(time.time() - t0, 1),
    }, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
