"""RESP over a connected socket, for the scripts that talk to Redis with the standard
library only: tests/e2e/tls_client.py (over TLS) and bench/clusterwait.py (plain)."""


class RespConn:
    """A connected socket (plain or TLS; None until the caller connects) and what was read
    from it past the last reply. A read raises OSError when the peer closes."""

    def __init__(self, sock=None):
        self.sock, self.buf = sock, b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        self.buf += chunk

    def line(self):
        """The next line, without its CRLF."""
        while b"\r\n" not in self.buf:
            self._fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        """The next n bytes (a bulk string's body); the CRLF after them is dropped."""
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def send(self, *args):
        """One command: each argument sent as the bulk string of its str()."""
        out = b"*%d\r\n" % len(args)
        for x in args:
            x = str(x).encode()
            out += b"$%d\r\n%s\r\n" % (len(x), x)
        self.sock.sendall(out)
