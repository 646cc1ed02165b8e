#!/usr/bin/env python3
"""Static SASS instruction counts per kernel from `cuobjdump -sass BIN` on stdin, for the kernels
whose demangled-ish name matches REGEX (argv[1]); one line each: count, then the mangled name.
A proxy for the work of a loop body when two builds of the same kernel are compared."""
import re
import sys

pat = re.compile(sys.argv[1])
counts, cur = {}, None
for line in sys.stdin:
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        cur = m.group(1) if pat.search(m.group(1)) else None
        if cur:
            counts[cur] = 0
        continue
    if cur and re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+\S", line):
        counts[cur] += 1
for name, n in sorted(counts.items()):
    print(n, name)
