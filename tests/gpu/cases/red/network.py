# Reaches out: TCP and UDP to a listener on the worker's loopback, the harness server's
# Unix socket, and an abstract Unix socket (the suite rewrites the addresses). Errors are
# swallowed: the suite checks that nothing arrived.
import socket

TCP_PORT = 0        # rewritten by the suite
UDP_PORT = 0
ABSTRACT = "kagent-red-abstract"
UNIX_PATHS = []     # rewritten by the suite: the server's socket


def attack():
    for fam, kind, addr in ((socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", TCP_PORT)),
                            (socket.AF_UNIX, socket.SOCK_STREAM, "\0" + ABSTRACT)) + tuple(
            (socket.AF_UNIX, socket.SOCK_STREAM, p) for p in UNIX_PATHS):
        try:
            s = socket.socket(fam, kind)
            s.settimeout(2)
            s.connect(addr)
            s.sendall(b"kagent-red-network")
            s.close()
        except OSError:
            pass
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"kagent-red-network", ("127.0.0.1", UDP_PORT))
        u.close()
    except OSError:
        pass
