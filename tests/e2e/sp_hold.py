# SPDX-License-Identifier: MIT
"""sp_hold.py PORT [N] -- opens N (default 64: a tcp:// daemon's cap of
connections without the token from one address) connections to
127.0.0.1:PORT as push0 peers that never send, prints "holding" once each
has finished the SP handshake, and holds them until it is ended.  While it
does, the daemon refuses every other connection from this address that has
not shown the token (daemon/serve/netguard.c).  Standard library only."""
import socket
import struct
import sys
import time

# the SP header of a push0 peer: 0 'S' 'P' 0, protocol 80 (push0) big-endian,
# 2 reserved zero bytes; a pull0 daemon answers with protocol 81
HELLO = b"\x00SP\x00" + struct.pack(">H", 80) + b"\x00\x00"


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(HELLO)
    got = b""
    while len(got) < 8:
        chunk = s.recv(8 - len(got))
        if not chunk:
            raise SystemExit("the daemon closed a connection during the SP handshake")
        got += chunk
    if got[:4] != b"\x00SP\x00" or struct.unpack(">H", got[4:6])[0] != 81:
        raise SystemExit(f"unexpected SP header from the daemon: {got!r}")
    return s


def main(port, n):
    conns = [connect(port) for _ in range(n)]
    print("holding", flush=True)
    while conns:
        time.sleep(3600)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 64)
