"""The warm interpreter's child forked ahead of its request (python/trex_eval_zygote.py's
WaitingChild) fails closed when the layers it makes while it waits cannot be made: it runs
nothing of the program, writes "trex sandbox: STEP: ERROR" to the program's stderr and exits
126, as a child does for any other layer; when they were made, it enters the rest of the
sandbox saying so (prepared=1). The sandbox library is replaced by a stand-in, so that a
failure can be caused here without changing the machine (the real library's prepare is
tested by SandboxChild.APreparedChildEndsTheSame). Run by tests/oreval/warm_pool_test.cc."""
import ctypes
import json
import os
import socket
import unittest

import trex_eval_zygote as z


class StandInLibrary:
    """trex_sandbox_prepare fails or not; trex_sandbox_enter reports its `prepared` argument on
    the program's stdout and ends the child (status 7), so nothing after it runs."""

    def __init__(self, prepare_fails):
        self.prepare_fails = prepare_fails

    def trex_sandbox_prepare(self, buf, length):
        if not self.prepare_fails:
            return 0
        ctypes.memmove(buf, b"unshare(CLONE_NEWNET): Operation not permitted\0", 47)
        return -1

    def trex_sandbox_enter(self, *args):
        os.write(args[7], b"entered prepared=%d\n" % args[11])  # stdout, prepared
        os._exit(7)


def run_waiting_child(prepare_fails):
    """Forks a waiting child with the stand-in library, hands it a request whose program would
    print "ran", and returns (exit status, stdout, stderr)."""
    ctl, ctl_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    chan_r, chan_w = os.pipe()
    request = {"workdir": "/nonexistent", "read_only": [], "argv": ["/usr/bin/python3", "-I", "-B", "runner", "p.py"],
               "env": [], "allow_weak": False,
               "limits": {"cpu_s": 1, "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "open_files": 64}}
    waiting = z.WaitingChild(StandInLibrary(prepare_fails), ctl)
    waiting.fork()
    pid = waiting.hand(json.dumps(request).encode(), [out_w, err_w, chan_w])
    for fd in (out_w, err_w, chan_w, chan_r):
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    out = os.read(out_r, 4096)
    err = os.read(err_r, 4096)
    for s in (ctl, ctl_peer):
        s.close()
    os.close(out_r)
    os.close(err_r)
    return os.waitstatus_to_exitcode(status), out, err


class WaitingChild(unittest.TestCase):
    def test_a_failed_prepare_runs_nothing_and_says_why(self):
        code, out, err = run_waiting_child(prepare_fails=True)
        self.assertEqual(code, z.EXIT_SANDBOX)
        self.assertEqual(out, b"")  # the rest of the sandbox was not entered, nothing ran
        self.assertEqual(err, b"trex sandbox: unshare(CLONE_NEWNET): Operation not permitted\n")

    def test_a_prepared_child_enters_the_rest_saying_so(self):
        code, out, err = run_waiting_child(prepare_fails=False)
        self.assertEqual(code, 7)
        self.assertEqual(out, b"entered prepared=1\n")
        self.assertEqual(err, b"")


if __name__ == "__main__":
    unittest.main()
