#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal of a set size, as typed at a shell:
its controlling terminal is the pty, so that a ^C written to it is SIGINT.

pty.py [--size ROWSxCOLS] [--stdin FILE] [--stderr FILE] [--wait TEXT]
       [--keys KEYS] -- COMMAND...

--stdin FILE   standard input is a pipe that gives FILE and then stays open
               (a stream whose producer is still running); else the pty
--stderr FILE  standard error goes to FILE; else to the pty
--wait TEXT    waits for TEXT in what the command wrote (the pty or FILE)
               before it types KEYS (Python escapes: \\x03 is ^C)

Writes what the command wrote on the pty, then "status N" or "signal N".
The 10 s bound only keeps a broken command from hanging the tests: every
wait is for something the command writes or does, never for time to pass.
"""
import argparse
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

BOUND_S = 10


def child_setup(slave):
    def setup():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    return setup


def read_ready(master, out, until):
    while time.monotonic() < until:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            return True
        try:
            data = os.read(master, 65536)
        except OSError:
            return False
        if not data:
            return False
        out.extend(data)
    return True


def seen(text, out, errfile):
    if text.encode() in out:
        return True
    if errfile and os.path.exists(errfile):
        with open(errfile, 'rb') as f:
            return text.encode() in f.read()
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--size', default='24x80')
    ap.add_argument('--stdin')
    ap.add_argument('--stderr')
    ap.add_argument('--wait')
    ap.add_argument('--keys', default='')
    ap.add_argument('command', nargs='+')
    a = ap.parse_args()
    rows, cols = (int(x) for x in a.size.split('x'))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ,
                struct.pack('HHHH', rows, cols, 0, 0))
    feed_r = feed_w = None
    stdin = slave
    if a.stdin:
        feed_r, feed_w = os.pipe()
        stdin = feed_r
    err = open(a.stderr, 'wb') if a.stderr else slave
    p = subprocess.Popen(a.command, stdin=stdin, stdout=slave, stderr=err,
                         preexec_fn=child_setup(slave), close_fds=True)
    os.close(slave)
    if feed_r is not None:
        os.close(feed_r)
        with open(a.stdin, 'rb') as f:
            os.write(feed_w, f.read())
    out = bytearray()
    until = time.monotonic() + BOUND_S
    if a.wait:
        while not seen(a.wait, out, a.stderr) and p.poll() is None \
                and time.monotonic() < until:
            read_ready(master, out, time.monotonic() + 0.05)
    keys = a.keys.encode().decode('unicode_escape').encode('latin-1')
    if keys:
        os.write(master, keys)
    while p.poll() is None and time.monotonic() < until:
        read_ready(master, out, time.monotonic() + 0.05)
    if p.poll() is None:
        p.kill()
        p.wait()
        sys.stdout.buffer.write(bytes(out))
        print('\ntimeout')
        return 1
    read_ready(master, out, time.monotonic() + 0.5)
    if feed_w is not None:
        os.close(feed_w)
    sys.stdout.buffer.write(bytes(out))
    rc = p.returncode
    print('\nsignal %d' % -rc if rc < 0 else '\nstatus %d' % rc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
