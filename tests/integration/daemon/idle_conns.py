#!/usr/bin/env python3
"""idle_conns.py SOCKET N READY_FILE: a hostile tenant's connection flood.

Opens N connections to the API's Unix socket and sends nothing on them.
Once all N connect() calls returned it writes, to READY_FILE, how many
are still open one second later (a connection the server closed reads as
EOF), then sits until killed.
"""
import os
import socket
import sys
import time

path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        continue
    conns.append(s)
time.sleep(1)


def still_open(s):
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


with open(ready + ".tmp", "w") as f:
    f.write("%d %d\n" % (len(conns), sum(1 for s in conns if still_open(s))))
os.rename(ready + ".tmp", ready)
while True:
    time.sleep(60)
