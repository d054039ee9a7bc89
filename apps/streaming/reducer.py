#!/usr/bin/env python3
"""WordCount's reducer for `minimr streaming`: `word<TAB>count` for each word.

Its input is `word<TAB>count` lines sorted by word, a word's lines together (the combiner's output
as much as the mapper's: counts are summed, so it serves as the combiner too).
"""
import sys


def main() -> None:
    out = sys.stdout.buffer
    current = None
    total = 0
    for line in sys.stdin.buffer:
        key, _, value = line.rstrip(b"\n").partition(b"\t")
        if key != current:
            if current is not None:
                out.write(current + b"\t" + str(total).encode() + b"\n")
            current = key
            total = 0
        total += int(value)
    if current is not None:
        out.write(current + b"\t" + str(total).encode() + b"\n")


if __name__ == "__main__":
    main()
