#!/usr/bin/env python3
"""WordCount's mapper for `minimr streaming`: `word<TAB>1` for every word of every input line.

A word is a maximal run of bytes other than space, tab, CR, LF and form feed, as apps/wordcount.ts
(Java's StringTokenizer) has it; case is kept. Works on bytes, so any encoding passes through as is.
"""
import re
import sys

WORD = re.compile(rb"[^ \t\r\n\f]+")


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        for word in WORD.findall(line):
            out.write(word + b"\t1\n")


if __name__ == "__main__":
    main()
