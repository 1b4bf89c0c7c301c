"""Prints, as programs do, more than anyone reads.

Usage: prints.py lines N [WIDTH] | forever | long BYTES | bytes. `lines`: N numbered lines of WIDTH
characters; `forever`: numbered lines until stopped; `long`: one line of BYTES bytes, written a
megabyte at a time; `bytes`: a line with invalid UTF-8 on stdout and on stderr.
"""

import sys

out = sys.stdout.buffer
mode = sys.argv[1]
if mode == "lines":
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    for i in range(int(sys.argv[2])):
        out.write(f"{i:0{width}d}\n".encode())
elif mode == "forever":
    i = 0
    while True:
        out.write(f"line {i}\n".encode())
        i += 1
elif mode == "long":
    left = int(sys.argv[2])
    chunk = b"x" * (1 << 20)
    while left > 0:
        out.write(chunk[:left])
        left -= len(chunk)
    out.write(b"\n")
elif mode == "bytes":
    out.write(b"caf\xe9 \xff\xfe not UTF-8\n")
    sys.stderr.buffer.write(b"err \xc3\x28 not UTF-8\n")
out.flush()
