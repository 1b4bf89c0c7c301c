"""Leaves processes behind when it exits, as careless programs do.

Usage: leaves_behind.py setsid PIDFILE | zombie PIDFILE.
`setsid`: a grandchild calls setsid() (a session, and group, of its own) and sleeps; its parent and
the program exit at once. `zombie`: a child W starts a grandchild Z that exits at once, then W moves
to a group of its own and sleeps without reaping Z: the program's group holds only the zombie Z.
Each writes the pids it left (one a line) to PIDFILE, then the program exits 0.
"""

import os
import sys
import time

mode, pidfile = sys.argv[1], sys.argv[2]
read_end, write_end = os.pipe()
child = os.fork()
if child == 0:
    os.close(read_end)
    if mode == "setsid":
        grandchild = os.fork()
        if grandchild == 0:
            os.setsid()
            os.write(write_end, f"{os.getpid()}\n".encode())
            os.close(write_end)
            time.sleep(120)
            os._exit(0)
        os._exit(0)
    zombie = os.fork()
    if zombie == 0:
        os._exit(0)
    os.setpgid(0, 0)
    os.write(write_end, f"{os.getpid()}\n{zombie}\n".encode())
    os.close(write_end)
    time.sleep(120)
    os._exit(0)
os.close(write_end)
pids = b""
while chunk := os.read(read_end, 100):
    pids += chunk
if mode == "setsid":
    os.waitpid(child, 0)
with open(pidfile, "wb") as f:
    f.write(pids)
print("left:", pids.decode().split())
