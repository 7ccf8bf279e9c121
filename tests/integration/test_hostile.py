"""test_hostile.py: `zbso serve` against hostile clients and operators (issue 10): slow
request heads and bodies, bodies past the memory cap, connection floods under a small
file-descriptor limit, a per-address
connection limit, ambiguous request framing (smuggling), unparsable request lines and
query strings, auth before routing, log lines a client tries to forge, SIGTERM under load
and SIGHUP. Standard library only; traffic only to loopback addresses (all of 127.0.0.0/8
is loopback: clients bind 127.x.y.z source addresses to stay under the per-address
limit).

On PostgreSQL and MariaDB (integration/pg/test_hostile, integration/mysql/test_hostile) the
classes whose outcome depends on the store run: the smuggling check, auth order and the
drain under load."""

import http.client
import json
import os
import resource
import signal
import socket
import tempfile
import threading
import time
import unittest

from zbsoserver import BACKEND, Server, job_spec, run_cli

TOKEN = "hostile-secret-token"


def setUpModule():
    # The flood tests hold over a thousand sockets in this process.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def connect(srv, source="127.0.0.1", timeout=30.0):
    """A TCP connection to srv from the loopback address source."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((srv.host, srv.port))
    return s


def read_until_close(s, timeout=10.0):
    """Everything s receives until the peer closes it (or resets it, or timeout passes).
    Returns (bytes, how): how is "closed", "reset" or "timeout"."""
    s.settimeout(timeout)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            b = s.recv(65536)
            if not b:
                return out, "closed"
            out += b
    except socket.timeout:
        return out, "timeout"
    except ConnectionResetError:
        return out, "reset"
    return out, "timeout"


def exchange(srv, data, timeout=10.0, source="127.0.0.1"):
    """Sends data on a fresh connection and returns (bytes received, how it ended)."""
    s = connect(srv, source)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_until_close(s, timeout)
    finally:
        s.close()


def status_lines(data):
    """The status codes of every HTTP response start found in data."""
    codes = []
    for line in data.split(b"\r\n"):
        if line.startswith(b"HTTP/1."):
            codes.append(int(line.split(b" ")[1]))
    return codes


def one_request(s, method, path, body=None, headers=""):
    """Sends one HTTP/1.1 request on socket s and reads its answer (Content-Length
    framed). Returns (status, body bytes) or raises OSError / AssertionError."""
    data = body.encode() if isinstance(body, str) else (body or b"")
    head = (f"{method} {path} HTTP/1.1\r\nHost: t\r\n{headers}"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    s.sendall(head + data)
    return read_answer(s)


def read_answer(s):
    """Reads one Content-Length framed answer from socket s. Returns (status, body bytes)
    or raises OSError."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            raise ConnectionResetError("closed before the answer's head")
        buf += b
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        b = s.recv(65536)
        if not b:
            raise ConnectionResetError("closed in the answer's body")
        rest += b
    return int(head.split(b" ")[1]), rest[:length]


def proc_stat(pid):
    """(CPU seconds used, threads) of process pid, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    with open(f"/proc/{pid}/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return ticks / os.sysconf("SC_CLK_TCK"), threads


def log_lines(srv):
    with open(srv.log_path, "rb") as f:
        return f.read().split(b"\n")


def source_address(k, per_address):
    """The loopback address for the k-th of many connections, per_address to each."""
    n = k // per_address
    return f"127.1.{n // 250}.{n % 250 + 1}"


class ServerCase(unittest.TestCase):
    """A server per test with the given extra arguments (and optional rlimit)."""

    def start(self, args=(), env=None, nofile=None):
        srv = Server(args=args, env=env)
        self.addCleanup(srv.close)
        if nofile is not None:
            srv.preexec_fn = lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                         (nofile, nofile))
        return srv.start()


if BACKEND == "sqlite":
    class SlowHeadTest(ServerCase):
        def test_slowloris_is_closed_by_the_header_timeout(self):
            """Connections that send their request head one byte at a time are closed
            about header-timeout after their first byte; an idle keep-alive connection
            is not, and fresh clients are served all along."""
            srv = self.start(["--header-timeout", "2"])
            idle = connect(srv)
            self.addCleanup(idle.close)
            self.assertEqual(one_request(idle, "GET", "/healthz")[0], 200)
            slow = []
            for k in range(40):
                s = connect(srv, source_address(k, 10))
                self.addCleanup(s.close)
                s.sendall(b"G")
                slow.append([s, time.monotonic(), None])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and any(e[2] is None for e in slow):
                fresh = connect(srv, "127.0.0.9")
                t0 = time.monotonic()
                self.assertEqual(one_request(fresh, "GET", "/healthz")[0], 200)
                self.assertLess(time.monotonic() - t0, 2.0)
                fresh.close()
                for e in slow:
                    if e[2] is not None:
                        continue
                    try:
                        e[0].send(b"E")
                    except OSError:
                        e[2] = time.monotonic() - e[1]
                        continue
                    e[0].settimeout(0.001)
                    try:
                        if e[0].recv(100) == b"":
                            e[2] = time.monotonic() - e[1]
                    except socket.timeout:
                        pass
                    except OSError:
                        e[2] = time.monotonic() - e[1]
                time.sleep(0.25)
            lives = sorted(e[2] for e in slow if e[2] is not None)
            self.assertEqual(len(lives), len(slow),
                             f"{len(slow) - len(lives)} slow connections still open after "
                             f"15 s; closed after {lives}")
            # 2 s timeout; the check runs every 0.5 s and notices a head within 0.5 s.
            self.assertGreaterEqual(lives[0], 1.9, lives)
            self.assertLess(lives[-1], 6.0, lives)
            # The idle keep-alive connection outlived them all and still works.
            self.assertEqual(one_request(idle, "GET", "/healthz")[0], 200)
            self.assertIn(b"header timeout", b"\n".join(log_lines(srv)))

    class ConnectionLimitTest(ServerCase):
        def test_per_address_limit(self):
            """--max-connections-per-ip N: the N+1-th connection from one address is
            closed unanswered; other addresses are served, and a freed slot is reusable."""
            srv = self.start(["--max-connections-per-ip", "4"])
            held = []
            for _ in range(4):
                s = connect(srv)
                self.addCleanup(s.close)
                self.assertEqual(one_request(s, "GET", "/healthz")[0], 200)
                held.append(s)
            extra = connect(srv)
            self.addCleanup(extra.close)
            try:
                extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            except OSError:
                pass
            data, how = read_until_close(extra, 10)
            self.assertEqual(data, b"", "a 5th connection from 127.0.0.1 was served")
            self.assertIn(how, ("closed", "reset"))
            other = connect(srv, "127.0.0.2")
            self.addCleanup(other.close)
            self.assertEqual(one_request(other, "GET", "/healthz")[0], 200)
            held[0].close()
            deadline = time.monotonic() + 10
            while True:
                s = connect(srv)
                try:
                    self.assertEqual(one_request(s, "GET", "/healthz")[0], 200)
                    break
                except OSError:
                    self.assertLess(time.monotonic(), deadline, "the freed slot stays taken")
                    time.sleep(0.1)
                finally:
                    s.close()

        def test_flood_at_hard_fd_limit_1024(self):
            """With the hard limit on open files at 1024 (soft = hard), a flood of ~1100
            connections: those beyond capacity are closed at once, the server does not
            spin (little CPU), logs a few lines at most, runs a bounded number of
            threads, and an established keep-alive client keeps being served."""
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            # This process holds the flood's sockets too.
            nofile = min(1024, hard - 300)
            self.assertGreater(nofile, 300, f"this process may open only {hard} files")
            flood = nofile + 80
            srv = self.start(nofile=nofile)
            ka = connect(srv)
            self.addCleanup(ka.close)
            self.assertEqual(one_request(ka, "GET", "/healthz")[0], 200)
            lines0 = len(log_lines(srv))
            cpu0, _ = proc_stat(srv.proc.pid)
            socks, served, refused = [], 0, 0
            t0 = time.monotonic()
            for k in range(flood):
                s = connect(srv, source_address(k, 100))
                socks.append(s)
                try:
                    status, _ = one_request(s, "GET", "/healthz")
                    self.assertEqual(status, 200)
                    served += 1
                except OSError:
                    refused += 1
                if k % 100 == 0:
                    self.assertEqual(one_request(ka, "GET", "/healthz")[0], 200)
            try:
                flood_s = time.monotonic() - t0
                # Quiet now: the server holds ~nofile connections and refuses the rest.
                cpu1, threads = proc_stat(srv.proc.pid)
                time.sleep(3.0)
                cpu2, _ = proc_stat(srv.proc.pid)
                for _ in range(20):
                    self.assertEqual(one_request(ka, "GET", "/healthz")[0], 200)
                # One more connection beyond capacity is refused at once, not left hanging.
                s = connect(srv, "127.0.0.3")
                socks.append(s)
                t = time.monotonic()
                try:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                except OSError:
                    pass
                data, how = read_until_close(s, 10)
                refuse_s = time.monotonic() - t
            finally:
                for s in socks:
                    s.close()
            lines = len(log_lines(srv)) - lines0
            report = (f"flood {flood} in {flood_s:.1f} s: {served} served, {refused} refused; "
                      f"server CPU {cpu1 - cpu0:.2f} s during, {cpu2 - cpu1:.2f} s in 3 s "
                      f"after; {threads} threads; {lines} log lines")
            print("\n[flood] " + report)
            self.assertGreater(refused, 0, report)
            self.assertGreater(served, nofile - 200, report)
            self.assertEqual(served + refused, flood, report)
            self.assertEqual((data, how in ("closed", "reset")), (b"", True), report)
            self.assertLess(refuse_s, 2.0, report)
            self.assertLess(cpu2 - cpu1, 0.6, report)
            self.assertLess(threads, 100, report)
            # The request log's lines (INFO, one per request) plus a few rate-limited ones.
            self.assertLess(lines, served + 60 + 40, report)
            refusals = [l for l in log_lines(srv)[lines0:] if b"refused a connection" in l]
            self.assertLessEqual(len(refusals), flood_s + 5, report)

    class ParsingTest(ServerCase):
        def test_garbage_request_line_gets_400(self):
            srv = self.start()
            for line in (b"HELLO", b" /healthz HTTP/1.1", b"\x16\x03\x01\x02\x00\x01"):
                data, how = exchange(srv, line + b"\r\n\r\n")
                self.assertEqual(status_lines(data), [400], (line, data))
                self.assertIn(b"malformed request line", data)
            # Lines libmicrohttpd answers itself get that one answer, not a second.
            for line, status in ((b"GET / FOO", 400), (b"GET / HTTP/2.0", 505),
                                 (b"GET /" + b"x" * 40000 + b" HTTP/1.1", 414)):
                data, how = exchange(srv, line + b"\r\n\r\n")
                self.assertEqual(status_lines(data), [status], (line[:20], data[:300]))
            # A client that connects and leaves, or ends its keep-alive connection after
            # an answer, gets nothing more.
            s = connect(srv)
            self.assertEqual(one_request(s, "GET", "/healthz")[0], 200)
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(read_until_close(s, 5), (b"", "closed"))
            s.close()
            s = connect(srv)
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(read_until_close(s, 5), (b"", "closed"))
            s.close()
            self.assertEqual(srv.request("GET", "/healthz").status, 200)

        def test_many_query_arguments_get_4xx(self):
            srv = self.start()
            for n in (500, 1000, 3000):
                q = "&".join(f"a{i}={i}" for i in range(n))
                data, how = exchange(
                    srv, f"GET /jobs/batch_size?job_id=x&{q} HTTP/1.1\r\nHost: t\r\n\r\n"
                    .encode())
                codes = status_lines(data)
                self.assertEqual(len(codes), 1, (n, data[:300], how))
                self.assertIn(codes[0], (400, 414, 431), (n, data[:300]))
            data, _ = exchange(srv, ("GET /jobs/batch_size?" + "&" * 2000 +
                                     " HTTP/1.1\r\nHost: t\r\n\r\n").encode())
            self.assertEqual(status_lines(data), [414], data[:300])

        def test_chunked_body_over_the_limit_gets_413(self):
            # No Content-Length to refuse early: the limit holds while the chunks arrive.
            # One byte over 1 MiB is refused, exactly 1 MiB is read (and, not being JSON,
            # refused by the codec), and the connection is kept for the next request.
            srv = self.start()
            s = connect(srv)
            self.addCleanup(s.close)
            for total, want in ((1024 * 1024 + 1, 413), (1024 * 1024, 422)):
                s.sendall(b"POST /jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                          b"\r\nTransfer-Encoding: chunked\r\n\r\n")
                left = total
                while left:
                    n = min(left, 65536)
                    s.sendall(b"%x\r\n" % n + b"a" * n + b"\r\n")
                    left -= n
                s.sendall(b"0\r\n\r\n")
                status, body = read_answer(s)
                self.assertEqual(status, want, (total, body[:300]))
                if want == 413:
                    self.assertIn(b"request body is over the limit of 1048576 bytes", body)
                self.assertEqual(one_request(s, "GET", "/healthz")[0], 200)

        def test_unknown_transfer_encoding_gets_400(self):
            data, _ = exchange(self.start(), b"POST /jobs HTTP/1.1\r\nHost: t\r\n"
                               b"Transfer-Encoding: gzip\r\n\r\nxxxx")
            self.assertEqual(status_lines(data), [400], data)


if BACKEND == "sqlite":
    class SlowBodyTest(ServerCase):
        """Request bodies have a deadline and a memory cap (issue 22 item 3)."""

        def test_slow_body_gets_408_closes_and_is_not_run(self):
            """A body not complete --body-timeout after its head is answered 408 and its
            connection closed, however it trickles (Content-Length or chunked); the
            request is never run, and other clients are served meanwhile."""
            srv = self.start(["--body-timeout", "2"])
            self.assertEqual(srv.request("POST", "/jobs", body=job_spec(job_id="itest-b"))
                             .status, 201)
            trial = srv.request("GET", "/jobs/batch_size?job_id=itest-b").json
            report = json.dumps(dict(trial, time=5.0, energy=500.0, metric=0.99,
                                     current_epoch=1)).encode()
            before = srv.snapshot()
            framed = (b"POST /report HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                      b"\r\nContent-Length: %d\r\n\r\n" % (len(report) + 50) + report)
            chunked = (b"PATCH /trials HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                       b"\r\n" + b"%x\r\n" % len(report) + report + b"\r\n")
            conns = []
            for data in (framed, chunked):
                s = connect(srv)
                self.addCleanup(s.close)
                s.sendall(data)
                conns.append([s, time.monotonic(), None, b""])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(c[2] is None for c in conns):
                fresh = connect(srv, "127.0.0.9")
                self.assertEqual(one_request(fresh, "GET", "/healthz")[0], 200)
                fresh.close()
                for c in conns:
                    if c[2] is not None:
                        continue
                    try:  # one more byte of whitespace (or a chunk of one): never the end
                        c[0].send(b" " if c is conns[0] else b"1\r\n \r\n")
                    except OSError:
                        pass
                    c[0].settimeout(0.05)
                    try:
                        b = c[0].recv(65536)
                    except socket.timeout:
                        continue
                    except OSError:
                        b = b""
                    c[3] += b
                    if not b:
                        c[2] = time.monotonic() - c[1]
                time.sleep(0.2)
            for s, _, life, answer in conns:
                self.assertIsNotNone(life, "a slow body was still open after 10 s")
                self.assertGreaterEqual(life, 1.9, answer)
                self.assertLess(life, 5.0, answer)
                self.assertEqual(status_lines(answer), [408], answer)
                self.assertIn(b"Connection: close", answer)
                self.assertIn(b"body timeout of 2 s", answer)
            # Neither the report (which would end the trial) nor the PATCH ran.
            self.assertEqual(srv.snapshot(), before)
            self.assertIn(b"answered 408", b"\n".join(log_lines(srv)))
            # A body that arrives in time, however slowly, is served as ever.
            s = connect(srv)
            self.addCleanup(s.close)
            s.sendall(framed[:-len(report)])
            for k in range(0, len(report), 40):
                s.sendall(report[k:k + 40])
                time.sleep(0.1)
            s.sendall(b" " * 50)
            status, body = read_answer(s)
            self.assertEqual(status, 200, body)
            self.assertTrue(json.loads(body)["stop_train"], body)

        def test_bodies_over_the_memory_cap_get_503_at_once(self):
            """Bodies being received hold at most 32 MiB together: a body declared past
            that is answered 503 at once (and closed) while small ones still pass; the
            memory comes back when the big ones go."""
            srv = self.start()
            big = []
            head = (b"POST /jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1048576\r\n\r\n")
            for k in range(33):
                s = connect(srv, f"127.0.0.{10 + k % 4}")
                self.addCleanup(s.close)
                s.sendall(head + b"[" + b" " * 999999)
                big.append(s)
            # 33,000,000 bytes held: one more 1 MiB body would pass 32 MiB.
            deadline = time.monotonic() + 10
            while True:
                data, how = exchange(srv, head + b"[", timeout=5)
                if status_lines(data) == [503] or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(status_lines(data), [503], data[:300])
            self.assertEqual(how, "closed", data[:300])
            self.assertIn(b"Retry-After: 1", data)
            self.assertIn(b"request bodies", data)
            # A small body still fits under the cap.
            r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-small"))
            self.assertEqual(r.status, 201, r)
            # A chunked body declares nothing: it is counted as it comes, and past the cap
            # it is dropped and answered 503 at its end, its connection closed.
            data, how = exchange(srv, b"POST /jobs HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
                                 b"chunked\r\n\r\n" + b"%x\r\n" % 600000 + b" " * 600000 +
                                 b"\r\n0\r\n\r\n", timeout=10)
            self.assertEqual(status_lines(data), [503], data[:300])
            self.assertEqual(how, "closed", data[:300])
            for s in big:
                s.close()
            # The big bodies' bytes are given back: a 1 MiB body is read (and refused by
            # the codec, not by the cap).
            deadline = time.monotonic() + 10
            while True:
                s = connect(srv)
                s.sendall(head + b"[" + b" " * (1048576 - 2) + b"]")
                status, body = read_answer(s)
                s.close()
                if status != 503 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.assertEqual(status, 422, body[:300])
            self.assertIn(b"request bodies", b"\n".join(log_lines(srv)))


class SmugglingTest(ServerCase):
    """Two Content-Length headers, or Content-Length with Transfer-Encoding: 400, the
    connection closes, and neither the request nor the one hidden in its body runs."""

    def smuggle(self, framing_headers, body):
        srv = self.start()
        outer = json.dumps(job_spec(job_id="itest-outer")).encode()
        hidden_body = json.dumps(job_spec(job_id="itest-hidden")).encode()
        hidden = (b"POST /jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(hidden_body)) + hidden_body
        head = (b"POST /jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                + framing_headers(outer, hidden) + b"\r\n")
        data, how = exchange(srv, head + body(outer, hidden))
        self.assertEqual(status_lines(data), [400], data)
        self.assertIn(how, ("closed", "reset"), data)
        self.assertIn(b"ambiguous", data)
        for jid in ("itest-outer", "itest-hidden"):
            r = srv.request("GET", f"/jobs/batch_size?job_id={jid}")
            self.assertEqual(r.status, 404, (jid, r))

    def test_two_content_lengths(self):
        self.smuggle(lambda o, h: b"Content-Length: %d\r\nContent-Length: %d\r\n"
                     % (len(o), len(o) + len(h)), lambda o, h: o + h)
        self.smuggle(lambda o, h: b"Content-Length: %d\r\nContent-Length: %d\r\n"
                     % (len(o) + len(h), len(o)), lambda o, h: o + h)

    def test_content_length_and_chunked(self):
        # CL.TE: Content-Length covers a hidden request after an empty chunked body.
        self.smuggle(lambda o, h: b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n"
                     % (5 + len(h)), lambda o, h: b"0\r\n\r\n" + h)
        # TE.CL: the chunked body carries a spec, then a hidden request follows.
        self.smuggle(lambda o, h: b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
                     lambda o, h: b"%x\r\n" % len(o) + o + b"\r\n0\r\n\r\n" + h)


class AuthOrderTest(ServerCase):
    def test_every_request_but_healthz_needs_the_token(self):
        srv = self.start(env={"ZEUS_BSO_API_TOKEN": TOKEN})
        good = {"Authorization": f"Bearer {TOKEN}"}
        for method, path in [("GET", "/no/such/path"), ("OPTIONS", "/jobs"),
                             ("HEAD", "/jobs"), ("TRACE", "/report"), ("PUT", "/trials"),
                             ("HEAD", "/healthz"), ("POST", "/healthz"),
                             ("GET", "/jobs/batch_size?job_id=x")]:
            r = srv.request(method, path)
            self.assertEqual(r.status, 401, (method, path, r))
            self.assertEqual(r.headers.get("WWW-Authenticate"), "Bearer", (method, path))
        self.assertEqual(srv.request("GET", "/healthz").status, 200)
        # With the token, routing answers as before.
        self.assertEqual(srv.request("GET", "/no/such/path", headers=good).status, 404)
        self.assertEqual(srv.request("OPTIONS", "/jobs", headers=good).status, 405)
        self.assertEqual(srv.request("GET", "/jobs/batch_size?job_id=x",
                                     headers=good).status, 404)


if BACKEND == "sqlite":
    class SettingsTest(unittest.TestCase):
        def test_bad_values_are_refused_naming_them(self):
            with tempfile.TemporaryDirectory() as tmp:
                db = ["--db", f"sqlite:///{tmp}/x.db"]
                for args, env, status, needle in [
                    (["--idle-timeout", "1.5"], {}, 2, "--idle-timeout '1.5'"),
                    (["--header-timeout", "x"], {}, 2, "--header-timeout 'x'"),
                    (["--body-timeout", "-2"], {}, 2, "--body-timeout '-2'"),
                    ([], {"ZEUS_BSO_BODY_TIMEOUT": "1e999"}, 2, "ZEUS_BSO_BODY_TIMEOUT '1e999'"),
                    (["--drain-timeout", "-1"], {}, 2, "--drain-timeout '-1'"),
                    (["--max-connections-per-ip", "1e3"], {}, 2,
                     "--max-connections-per-ip '1e3'"),
                    ([], {"ZEUS_BSO_HEADER_TIMEOUT": "nan"}, 2, "ZEUS_BSO_HEADER_TIMEOUT 'nan'"),
                    ([], {"ZEUS_BSO_MAX_CONNECTIONS_PER_IP": "-3"}, 2,
                     "ZEUS_BSO_MAX_CONNECTIONS_PER_IP '-3'"),
                    ([], {"ZEUS_BSO_IDLE_TIMEOUT": ""}, 2, "ZEUS_BSO_IDLE_TIMEOUT ''"),
                    ([], {"ZEUS_BSO_DRAIN_TIMEOUT": "inf"}, 2, "ZEUS_BSO_DRAIN_TIMEOUT 'inf'"),
                    (["--log-file", f"{tmp}/no/such/dir.log"], {}, 1, f"{tmp}/no/such/dir.log"),
                ]:
                    r = run_cli(["serve", "--port", "0", *db, *args], cwd=tmp, env=env)
                    self.assertEqual(r.returncode, status, (args, env, r.stderr))
                    self.assertIn(needle, r.stderr, (args, env))
                    self.assertNotIn("listening", r.stdout)


if BACKEND == "sqlite":
    class LogEscapeTest(ServerCase):
        def test_client_text_cannot_forge_log_lines(self):
            srv = self.start()
            forged = "2001-01-01T00:00:00.000Z INFO forged"
            q = forged.replace(" ", "%20")
            srv.request("GET", f"/jobs/batch_size?job_id=x%0A{q}")
            srv.request("GET", f"/x%0D%0A{q}%22%5C%C3%A9")
            srv.request("POST", "/jobs", body=job_spec(job_id="itest\n" + forged))
            srv.request("DELETE", f"/jobs?job_id=y%0A{q}")
            self.assertEqual(srv.terminate(), 0)
            lines = log_lines(srv)
            self.assertFalse([l for l in lines if l.startswith(b"2001-") or
                              l.startswith(b"\r")], lines)
            text = b"\n".join(lines)
            self.assertIn(b"job_id=x\\x0a2001-01-01T00:00:00.000Z INFO forged", text)
            self.assertIn(b"GET /x\\x0d\\x0a2001-01-01T00:00:00.000Z INFO forged\\x22\\x5c"
                          b"\\xc3\\xa9 404", text)
            for line in lines:
                self.assertNotIn(b"\r", line)


class SignalTest(ServerCase):
    if BACKEND == "sqlite":
        def test_sighup_without_log_file_is_ignored(self):
            srv = self.start()
            for _ in range(3):
                srv.proc.send_signal(signal.SIGHUP)
                time.sleep(0.2)
                self.assertIsNone(srv.proc.poll(), srv.log_tail())
                self.assertEqual(srv.request("GET", "/healthz").status, 200)
            self.assertEqual(srv.terminate(), 0, srv.log_tail())
            self.assertIn("SIGHUP ignored", srv.log_tail())

        def test_sighup_reopens_the_log_file(self):
            srv = Server()
            self.addCleanup(srv.close)
            path = os.path.join(srv.tmpdir, "zbso.log")
            srv.args = ["--log-file", path]
            srv.start()
            self.assertEqual(srv.request("GET", "/healthz").status, 200)
            os.rename(path, path + ".1")
            self.assertEqual(srv.request("GET", "/jobs/batch_size?job_id=before").status, 404)
            srv.proc.send_signal(signal.SIGHUP)
            # The line saying so is written to the new file once it is the log.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if os.path.exists(path):
                    with open(path, "rb") as f:
                        if b"reopened the log file" in f.read():
                            break
                time.sleep(0.05)
            self.assertEqual(srv.request("GET", "/jobs/batch_size?job_id=after").status, 404)
            self.assertEqual(srv.terminate(), 0, srv.log_tail())
            with open(path + ".1", "rb") as f:
                old = f.read()
            with open(path, "rb") as f:
                new = f.read()
            self.assertIn(b"job_id=before", old)
            self.assertNotIn(b"job_id=after", old)
            self.assertIn(b"reopened the log file", new)
            self.assertIn(b"job_id=after", new)
            self.assertIn(b"received SIGTERM", new)

    def test_sigterm_under_load_answers_every_request(self):
        """32 keep-alive clients loop register / batch size / report / end; SIGTERM
        mid-load. Every request whose bytes were all sent before the signal gets its
        answer (those sent later may be refused); the server exits 0; after a restart,
        the clients end the trials they hold and no trial is left Dispatched."""
        srv = self.start(["--drain-timeout", "20"])
        n_clients = 32
        stop_at = [None]        # monotonic time of the signal, once sent
        records = []            # (client, what, t_sent or None, outcome)
        holding = {}            # client -> trial id it got and has not ended
        lock = threading.Lock()
        go = threading.Barrier(n_clients + 1)

        def client(i):
            jid = f"itest-drain-{i}"
            conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)

            def call(what, method, path, body=None):
                data = json.dumps(body).encode() if body is not None else None
                hdrs = {"Content-Type": "application/json"} if data else {}
                t_sent = None
                try:
                    conn.request(method, path, body=data, headers=hdrs)
                    t_sent = time.monotonic()
                    resp = conn.getresponse()
                    out = (resp.status, resp.read())
                    if resp.will_close:
                        conn.close()
                except (OSError, http.client.HTTPException) as e:
                    out = (None, repr(e))
                with lock:
                    records.append((i, what, t_sent, out))
                return out

            status, body = call("register", "POST", "/jobs",
                                job_spec(job_id=jid, batch_sizes=[8, 16, 32],
                                         default_batch_size=16, max_epochs=2))
            go.wait()
            if status not in (200, 201):
                return
            while True:
                status, body = call("next", "GET", f"/jobs/batch_size?job_id={jid}")
                if status != 200:
                    return
                trial = json.loads(body)
                with lock:
                    holding[i] = trial
                status, _ = call("report", "POST", "/report",
                                 dict(trial, time=10.0, energy=2000.0, metric=0.1,
                                      current_epoch=1))
                if status != 200:
                    return
                status, _ = call("end", "PATCH", "/trials", trial)
                if status != 200:
                    return
                with lock:
                    holding.pop(i, None)

        threads = [threading.Thread(target=client, args=(i,), daemon=True)
                   for i in range(n_clients)]
        for t in threads:
            t.start()
        go.wait()
        time.sleep(1.5)
        with lock:
            before = len(records)
        stop_at[0] = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        rc = srv.proc.wait(timeout=60)
        for t in threads:
            t.join(60)
        srv.proc.stdout.close()
        srv.proc = None
        self.assertEqual(rc, 0, srv.log_tail())
        t_sig = stop_at[0]
        sent_before = [r for r in records if r[2] is not None and r[2] < t_sig]
        unanswered = [r for r in sent_before if r[3][0] is None]
        after = [r for r in records if r[2] is None or r[2] >= t_sig]
        print(f"\n[drain] backend={BACKEND} {len(records)} requests, {before} before the "
              f"signal was decided; {len(sent_before)} sent before it, "
              f"{len(unanswered)} of those unanswered; {len(after)} sent after "
              f"({sum(1 for r in after if r[3][0] is not None)} answered)")
        self.assertGreater(before, n_clients * 3, "no load before the signal")
        self.assertEqual(unanswered, [], srv.log_tail())
        self.assertTrue(all(r[3][0] in (200, 201) for r in records if r[3][0] is not None),
                        [r for r in records if r[3][0] not in (None, 200, 201)][:5])
        # Restart; every client ends the trial it holds.
        srv.start()
        for i, trial in sorted(holding.items()):
            r = srv.request("PATCH", "/trials", body=trial)
            self.assertEqual(r.status, 200, (i, trial, r))
        left = [t for t in srv.rows("trials") if t["status"] == 0]
        self.assertEqual(left, [], "trials left Dispatched after the drain")
        self.assertEqual(srv.terminate(), 0, srv.log_tail())


if __name__ == "__main__":
    unittest.main()
