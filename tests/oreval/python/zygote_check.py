"""The warm interpreter's child forked ahead of its request (python/trex_eval_zygote.py's
WaitingChild) fails closed when the layers it makes while it waits cannot be made: it runs
nothing of the program, writes "trex sandbox: STEP: ERROR" to the program's stderr and exits
126, as a child does for any other layer; when they were made, it enters the rest of the
sandbox saying so (prepared=1); and each program's child makes them itself, never the zygote
(its session, and its namespaces unless the zygote's network namespace is shared, which the
library decides: sandbox_child.h). The sandbox library is replaced by a stand-in, so that a
failure can be caused here without changing the machine (the real library's prepare is
tested by SandboxChild.APreparedChildEndsTheSame). Also: a child's environment is its
request's, in order; the zygote's warm-ups before its first fork leave nothing behind. Run by
tests/oreval/warm_pool_test.cc."""
import ctypes
import itertools
import json
import os
import select
import signal
import socket
import sys
import time
import unittest

import trex_eval_pyc as pyc
import trex_eval_zygote as z


class StandInLibrary:
    """trex_sandbox_prepare fails or not; trex_sandbox_enter reports its `prepared` argument on
    the program's stdout and ends the child (status 7), so nothing after it runs."""

    def __init__(self, prepare_fails, log_fd=None):
        self.prepare_fails = prepare_fails
        self.log_fd = log_fd  # where each call of prepare writes the pid that made it

    def trex_sandbox_prepare(self, buf, length):
        if self.log_fd is not None:
            os.write(self.log_fd, b"%d\n" % os.getpid())
        if not self.prepare_fails:
            return 0
        ctypes.memmove(buf, b"unshare(CLONE_NEWNET): Operation not permitted\0", 47)
        return -1

    def trex_sandbox_enter(self, *args):
        os.write(args[7], b"entered prepared=%d\n" % args[11])  # stdout, prepared
        os._exit(7)


def run_waiting_child(prepare_fails, lib=None, pages=()):
    """Forks a waiting child with the stand-in library (or `lib`) and the zygote's `pages` to
    copy ahead, hands it a request whose program would print "ran", and returns (exit status,
    stdout, stderr, the child's pid)."""
    ctl, ctl_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    chan_r, chan_w = os.pipe()
    request = {"workdir": "/nonexistent", "read_only": [], "argv": ["/usr/bin/python3", "-I", "-B", "runner", "p.py"],
               "env": [], "allow_weak": False,
               "limits": {"cpu_s": 1, "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "open_files": 64}}
    waiting = z.WaitingChild(lib or StandInLibrary(prepare_fails), ctl, pages)
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
    return os.waitstatus_to_exitcode(status), out, err, pid


class WaitingChild(unittest.TestCase):
    def test_a_failed_prepare_runs_nothing_and_says_why(self):
        code, out, err, _ = run_waiting_child(prepare_fails=True)
        self.assertEqual(code, z.EXIT_SANDBOX)
        self.assertEqual(out, b"")  # the rest of the sandbox was not entered, nothing ran
        self.assertEqual(err, b"trex sandbox: unshare(CLONE_NEWNET): Operation not permitted\n")

    def test_a_prepared_child_enters_the_rest_saying_so(self):
        code, out, err, _ = run_waiting_child(prepare_fails=False)
        self.assertEqual(code, 7)
        self.assertEqual(out, b"entered prepared=1\n")
        self.assertEqual(err, b"")

    def test_each_program_s_child_makes_its_own_namespaces(self):
        # The namespaces are fresh per program only if prepare runs in each waiting child and
        # never in the zygote (a zygote that made one namespace and let its children skip
        # theirs would pass every test that compares a program's namespace with the
        # evaluator's). Namespace inode numbers cannot show it: a freed namespace's number is
        # reused. So the stand-in records which process called prepare.
        log_r, log_w = os.pipe()
        lib = StandInLibrary(prepare_fails=False, log_fd=log_w)
        pids = [run_waiting_child(False, lib)[3] for _ in range(2)]
        os.close(log_w)
        callers = [int(line) for line in os.read(log_r, 4096).split()]
        os.close(log_r)
        self.assertEqual(callers, pids)  # one call per program, each in that program's child
        self.assertNotIn(os.getpid(), callers)
        self.assertNotEqual(pids[0], pids[1])


class ReceiveRequest(unittest.TestCase):
    def test_a_request_is_read_whole_with_its_descriptors_cut_at_the_limit_and_empty_at_the_end(self):
        # receive_request peeks at the message's size and reads that much (not a 1 MB buffer
        # per child); what it returns is what recv_fds with the limit returned.
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        null = os.open(os.devnull, os.O_RDONLY)
        limit = z.REQUEST_LIMIT
        try:
            for message in (b"{}", b"x" * 70000):
                socket.send_fds(here, [message], [null, null, null])
                got, fds, flags, _ = z.receive_request(there)
                self.assertEqual(got, message)
                self.assertEqual(len(fds), 3)
                self.assertEqual(flags & socket.MSG_TRUNC, 0)
                for fd in fds:
                    self.assertEqual(os.fstat(fd).st_ino, os.fstat(null).st_ino)
                    os.close(fd)
            z.REQUEST_LIMIT = 100
            socket.send_fds(here, [b"y" * 101], [null, null, null])
            got, fds, flags, _ = z.receive_request(there)
            self.assertEqual(got, b"y" * 100)  # cut, as recv_fds cuts it: its json fails
            self.assertNotEqual(flags & socket.MSG_TRUNC, 0)
            for fd in fds:
                os.close(fd)
            here.close()
            got, fds, _, _ = z.receive_request(there)
            self.assertEqual((got, fds), (b"", []))  # the zygote is gone: nothing runs
        finally:
            z.REQUEST_LIMIT = limit
            os.close(null)
            there.close()
            if here.fileno() >= 0:
                here.close()


def page_flags(address, length):
    """/proc/self/pagemap's entries of the pages of [address, address + length)."""
    import struct

    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        data = os.pread(fd, (length >> 12) * 8, (address >> 12) * 8)
    finally:
        os.close(fd)
    return struct.unpack("%dQ" % (len(data) // 8), data)


PRESENT, EXCLUSIVE = 1 << 63, 1 << 56


class OwnPagesLibrary(StandInLibrary):
    """A stand-in whose trex_sandbox_enter (the first thing after the request) writes on the
    program's stdout how many pages of a buffer the child maps exclusively (its own copies;
    a page it still shares with the zygote is not) and whether the buffer holds what the
    zygote wrote."""

    def __init__(self, buffer, address, length):
        super().__init__(prepare_fails=False)
        self.buffer, self.address, self.length = buffer, address, length

    def trex_sandbox_enter(self, *args):
        own = sum(1 for f in page_flags(self.address, self.length) if f & PRESENT and f & EXCLUSIVE)
        intact = bytes(self.buffer[::4096]) == bytes(range(1, 1 + self.length // 4096))
        os.write(args[7], b"own %d intact %d\n" % (own, intact))
        os._exit(7)


class CopyAhead(unittest.TestCase):
    """The waiting child makes its copies of the zygote's pages before its request (copy_ahead:
    MADV_POPULATE_WRITE), so the program does not take a page fault for each; the candidates
    are the present pages of the zygote's private writable mappings, never a shared one, and of
    those the ones a child wrote in the warm-ups' code; a copy that fails only leaves the pages
    to be copied on first write."""

    PAGES = 64

    def buffer(self):
        # Over malloc's mmap threshold: a private anonymous mapping of its own, page-aligned
        # data (bytearray's header sits before it on the same first page).
        buf = bytearray(4096 * (self.PAGES + 1))
        address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        first = (address + 4095) & ~4095
        view = memoryview(buf)[first - address:first - address + 4096 * self.PAGES]
        for i in range(self.PAGES):
            view[i * 4096] = i + 1
        return buf, view, first

    def test_the_zygote_s_written_pages_are_listed_a_shared_mapping_s_are_not(self):
        import mmap

        buf, view, first = self.buffer()
        shared = mmap.mmap(-1, 4096 * 4, flags=mmap.MAP_SHARED)
        shared[0] = shared[4096] = 1
        shared_at = ctypes.addressof(ctypes.c_char.from_buffer(shared))
        runs = z.private_pages()
        covered = lambda a: any(start <= a < start + length for start, length in runs)
        self.assertTrue(all(covered(first + i * 4096) for i in range(self.PAGES)))
        self.assertFalse(covered(shared_at) or covered(shared_at + 4096))
        # A mapping over the limit is not read (a reservation; its pagemap could be gigabytes):
        # its present page is left out of a list read after it was mapped, the rest still in.
        huge = mmap.mmap(-1, z.MAPPING_LIMIT + 4096, flags=mmap.MAP_PRIVATE)
        huge[0] = 1
        huge_at = ctypes.addressof(ctypes.c_char.from_buffer(huge))
        with_huge = z.private_pages()
        covered_now = lambda a: any(start <= a < start + length for start, length in with_huge)
        self.assertFalse(covered_now(huge_at))
        self.assertTrue(all(covered_now(first + i * 4096) for i in range(self.PAGES)))
        huge.close()
        for start, length in runs:
            self.assertEqual(start % 4096, 0)
            self.assertGreater(length, 0)
            self.assertEqual(length % 4096, 0)
        del view
        shared.close()

    def test_a_waiting_child_owns_its_copies_before_its_request(self):
        buf, view, first = self.buffer()
        lib = OwnPagesLibrary(view, first, 4096 * self.PAGES)
        code, out, err, _ = run_waiting_child(False, lib, z.private_pages())
        self.assertEqual((code, out, err), (7, b"own %d intact 1\n" % self.PAGES, b""))
        # Without the copies the child still shares every page with the zygote: what the
        # check above sees is the copy made ahead, not a write of the child's.
        code, out, err, _ = run_waiting_child(False, lib, ())
        self.assertEqual((code, out, err), (7, b"own 0 intact 1\n", b""))

    def test_only_the_pages_a_child_writes_around_a_program_are_copied(self):
        # A training child runs the warm-ups' code and reports the pages it wrote: some of the
        # zygote's private pages, never one it did not write (this buffer, which nothing of the
        # warm-ups touches), each inside a run of private_pages().
        buf, view, first = self.buffer()
        pages = z.private_pages()
        written = z.pages_children_write(pages)
        self.assertTrue(written)
        inside = lambda a: any(start <= a < start + length for start, length in pages)
        listed = [a for start, length in written for a in range(start, start + length, 4096)]
        self.assertTrue(all(inside(a) for a in listed))
        self.assertLess(len(listed), sum(length for _, length in pages) // 4096)
        self.assertFalse(any(first <= a < first + 4096 * self.PAGES for a in listed))
        self.assertIsNone(z.pages_children_write([]))
        del view

    def test_pages_the_zygote_writes_while_the_training_child_runs_are_not_listed(self):
        # The zygote serves the first programs beside the training child: its writes make its
        # own copies, and must not make the training child's originals count as written.
        buf, view, first = self.buffer()
        training = z.PagesChildrenWrite(z.private_pages())
        for i in range(self.PAGES):
            view[i * 4096] = 100 + i
        written = training.poll(block=True)
        self.assertTrue(written)
        listed = [a for start, length in written for a in range(start, start + length, 4096)]
        self.assertEqual([a for a in listed if first <= a < first + 4096 * self.PAGES], [])
        del view

    def test_the_training_child_answers_once_and_a_stop_reaps_it(self):
        # Both ways the training child and its holder are reaped here; no process survives
        # them (an orphan would come to OrphansComeHere).
        with OrphansComeHere() as orphans:
            training = z.PagesChildrenWrite(z.private_pages())
            pid, holder = training.pid, training.holder
            # The holder holds the pages while the child runs: it may end only after the training
            # child has (at the EOF of the pipe only that child holds). Asked with WNOWAIT, so
            # nothing is reaped here and poll() still reaps both.
            peek = os.WEXITED | os.WNOHANG | os.WNOWAIT
            if os.waitid(os.P_PID, holder, peek) is not None:
                self.assertIsNotNone(os.waitid(os.P_PID, pid, peek))
            runs = training.poll(block=True)
            self.assertTrue(runs and training.done)
            self.assertIs(training.poll(), runs)  # asked again: the same answer, nothing read
            for gone in (pid, holder):
                with self.assertRaises(ChildProcessError):
                    os.waitpid(gone, os.WNOHANG)  # reaped
            self.assertEqual(orphans.left(), [])
        # Stopped before its answer, as at the end of a one-program run: killed and reaped, its
        # holder too. The training child is given time to be well into its work first.
        for delay in (0, 0.02):
            with self.subTest(delay=delay), OrphansComeHere() as orphans:
                stopped = z.PagesChildrenWrite(z.private_pages())
                pid, holder = stopped.pid, stopped.holder
                time.sleep(delay)
                stopped.stop()
                self.assertTrue(stopped.done)
                self.assertIsNone(stopped.poll())
                for gone in (pid, holder):
                    with self.assertRaises(ChildProcessError):
                        os.waitpid(gone, os.WNOHANG)
                    with self.assertRaises(ProcessLookupError):
                        os.kill(gone, 0)
                self.assertEqual(orphans.left(), [])

    def test_a_copy_that_fails_leaves_the_child_to_run(self):
        # Nothing is ever mapped below mmap_min_addr: madvise fails there (ENOMEM).
        code, out, err, _ = run_waiting_child(False, None, [(4096, 4096), (8192, 4096)])
        self.assertEqual((code, out, err), (7, b"entered prepared=1\n", b""))

    def test_a_run_that_cannot_be_written_stops_no_later_run(self):
        # A read-only run (madvise: EINVAL, as a kernel without MADV_POPULATE_WRITE answers)
        # first: the buffer's run after it is still copied ahead.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        PROT_READ, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 0x20
        read_only = libc.mmap(None, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        self.assertNotEqual(read_only, ctypes.c_void_p(-1).value)
        madvise = z.libc_madvise()
        self.assertTrue(z.populate_write_works(madvise))
        self.assertNotEqual(madvise(read_only, 4096, z.MADV_POPULATE_WRITE), 0)
        self.assertEqual(ctypes.get_errno(), 22)
        buf, view, first = self.buffer()
        lib = OwnPagesLibrary(view, first, 4096 * self.PAGES)
        code, out, err, _ = run_waiting_child(False, lib, [(read_only, 4096), (first, 4096 * self.PAGES)])
        self.assertEqual((code, out, err), (7, b"own %d intact 1\n" % self.PAGES, b""))
        libc.munmap(read_only, 4096)
        del view

    def test_where_the_kernel_cannot_copy_ahead_no_child_tries(self):
        waiting = z.WaitingChild(None, None)
        real = z.populate_write_works
        z.populate_write_works = lambda madvise: False
        try:
            waiting.use_pages([(4096, 4096)])
        finally:
            z.populate_write_works = real
        self.assertEqual(waiting.pages, ())
        waiting.use_pages([(4096, 4096)])  # probed once: still off
        self.assertEqual(waiting.pages, ())


def open_fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))


class TrainingChildFailures(unittest.TestCase):
    """The training child is a performance aid: whatever fails (its pipe or fork, its exit, its
    answer, the read) means no pages and no copies ahead, never an exception in the zygote."""

    def answer_of(self, send_written):
        real = z._send_written
        z._send_written = send_written
        try:
            return z.PagesChildrenWrite([(4096, 4096)]).poll(block=True)
        finally:
            z._send_written = real

    def test_a_child_that_exits_non_zero_gives_no_answer(self):
        def fails(fd, pages):
            os.write(fd, (4096).to_bytes(8, "little"))  # a whole answer, then a failure
            os._exit(3)

        self.assertIsNone(self.answer_of(fails))

    def test_a_partial_answer_is_no_answer(self):
        self.assertIsNone(self.answer_of(lambda fd, pages: os.write(fd, b"\0" * 12)))
        self.assertEqual(self.answer_of(lambda fd, pages: os.write(fd, (8192).to_bytes(8, "little"))), [(8192, 4096)])

    def test_a_fork_that_fails_leaves_no_descriptor_no_process_and_no_answer(self):
        # The holder's fork failing, and the training child's after the holder's succeeded (the
        # holder is then killed and reaped).
        real = z.os.fork
        for failing in (1, 2):
            with self.subTest(failing=failing), OrphansComeHere() as orphans:
                before = open_fds()
                forked = []

                def fork():
                    if len(forked) + 1 == failing:
                        raise BlockingIOError(11, "Resource temporarily unavailable")
                    pid = real()
                    if pid:
                        forked.append(pid)
                    return pid

                z.os.fork = fork
                try:
                    training = z.PagesChildrenWrite([(4096, 4096)])
                finally:
                    z.os.fork = real
                self.assertTrue(training.done)
                self.assertIsNone(training.poll())
                self.assertEqual(open_fds(), before)
                self.assertEqual(len(forked), failing - 1)
                for gone in forked:
                    with self.assertRaises(ChildProcessError):
                        os.waitpid(gone, os.WNOHANG)
                self.assertEqual(orphans.left(), [])

    def test_a_read_that_fails_ends_the_child_and_gives_no_answer(self):
        training = z.PagesChildrenWrite(z.private_pages())
        pid = training.pid
        real = z.os.read

        def read(fd, n):
            raise OSError(5, "Input/output error")

        z.os.read = read
        try:
            self.assertIsNone(training.poll(block=True))
        finally:
            z.os.read = real
        self.assertTrue(training.done)
        with self.assertRaises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # killed and reaped

    def test_the_setting_turns_the_copy_ahead_off(self):
        argv = ["trex_eval_zygote.py", "lib.so", "3", ""]
        self.assertTrue(z.copy_ahead_wanted(argv))  # an older evaluator passes none
        self.assertTrue(z.copy_ahead_wanted(argv + ["1"]))
        self.assertFalse(z.copy_ahead_wanted(argv + ["0"]))
        off = z.PagesChildrenWrite(())  # what main() starts then
        self.assertTrue(off.done)
        self.assertIsNone(off.pid)
        self.assertIsNone(off.poll())

    def test_the_evaluator_s_setting_asks_for_the_early_fork(self):
        argv = ["trex_eval_zygote.py", "lib.so", "3", "", "1"]
        self.assertFalse(z.fork_early_wanted(argv))  # an older evaluator passes none: after the status
        self.assertTrue(z.fork_early_wanted(argv + ["1"]))
        self.assertFalse(z.fork_early_wanted(argv + ["0"]))


class ForcedTraining:
    """A training child's stand-in whose answer (`runs`) is in at the first poll()."""

    def __init__(self, runs):
        self.runs, self.done = runs, False

    def poll(self, block=False):
        self.done = True
        return self.runs


class Serve(unittest.TestCase):
    """serve() wires the copy ahead: the child forked before the training answer (the first
    program's) copies nothing, every child forked after it copies the answer's pages."""

    PAGES = 64

    def test_children_forked_after_the_answer_copy_ahead_the_first_does_not(self):
        buf, view, first = CopyAhead.buffer(self)
        lib = OwnPagesLibrary(view, first, 4096 * self.PAGES)
        ctl, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                ctl.close()
                status = z.serve(lib, zygote_end, "test", 0, False, ForcedTraining([(first, 4096 * self.PAGES)]))
            finally:
                os._exit(status)
        zygote_end.close()
        try:
            self.assertTrue(json.loads(ctl.recv(1 << 16))["ready"])
            request = {"workdir": "/nonexistent", "read_only": [], "argv": ["/usr/bin/python3", "runner", "p.py"],
                       "env": [], "allow_weak": False,
                       "limits": {"cpu_s": 1, "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "open_files": 64}}
            outputs = []
            for _ in range(3):
                out_r, out_w = os.pipe()
                err_r, err_w = os.pipe()
                chan_r, chan_w = os.pipe()
                socket.send_fds(ctl, [json.dumps(request).encode()], [out_w, err_w, chan_w])
                for fd in (out_w, err_w, chan_w, chan_r):
                    os.close(fd)
                self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
                outputs.append((os.read(out_r, 4096), os.read(err_r, 4096)))
                ctl.send(b'{"wait":10}')
                status = json.loads(ctl.recv(1 << 16))
                self.assertEqual((os.waitstatus_to_exitcode(status["status"]), status["timed_out"]), (7, False))
                os.close(out_r)
                os.close(err_r)
        finally:
            ctl.close()
            _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(outputs, [(b"own 0 intact 1\n", b"")] + [(b"own %d intact 1\n" % self.PAGES, b"")] * 2)
        del view


class PipeTraining:
    """A training child's stand-in whose answer (`runs`) can be read at once: its descriptor is
    readable (the C loop looks at it between programs), and poll() gives the answer."""

    def __init__(self, runs):
        self.runs, self.done = runs, False
        self.fd, w = os.pipe()
        os.write(w, b"x")
        os.close(w)

    def poll(self, block=False):
        os.close(self.fd)
        self.fd, self.done = None, True
        return self.runs


def io_uring_pins():
    """Whether this process can make an io_uring and register a buffer of its own (pin it): what
    the zygote's pin_runs needs. No: kernel.io_uring_disabled, a seccomp filter, memlock."""
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    ring = libc.syscall(425, 1, params)  # io_uring_setup (x86-64)
    if ring < 0:
        return False
    try:
        page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        iov = (ctypes.c_uint64 * 2)(address, 4096)
        ok = libc.syscall(427, ring, 0, iov, 1) == 0  # io_uring_register, IORING_REGISTER_BUFFERS
        del address
        return ok
    finally:
        os.close(ring)


def sandbox_library():
    """The real sandbox library (the one the build made, named by warm_pool_test.cc), or None."""
    path = os.environ.get("TREX_SANDBOX_ENTER_LIB", "")
    return ctypes.CDLL(path) if path else None


def elf_bss_end(path):
    """The end of a 64-bit little-endian shared library's .bss (its address plus size, before
    the load bias): from its section headers."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names = struct.unpack_from("<IIQQQQ", data, shoff + shstrndx * shentsize)[4]
    for i in range(shnum):
        name, _, _, addr, _, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        if data[names + name:data.index(b"\0", names + name)] == b".bss":
            return addr + size
    raise ValueError("no .bss in " + path)


class OrphansComeHere:
    """This process as the subreaper of what it forks: a child the zygote left unreaped when it
    exited comes here (not to init, which would reap it at once), so left() finds it; it is then
    killed and reaped, and left() names it."""

    def __enter__(self):
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        if self.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
            raise OSError(ctypes.get_errno(), "PR_SET_CHILD_SUBREAPER")
        return self

    def left(self):
        found = []
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return found
            if pid == 0:  # one still runs: an orphan (the zygote itself was reaped by stop)
                with open("/proc/self/task/%d/children" % os.getpid()) as f:
                    for p in f.read().split():
                        os.kill(int(p), signal.SIGKILL)
                        found.append(int(p))
                for p in found:
                    try:
                        os.waitpid(p, 0)
                    except ChildProcessError:
                        pass
                return found
            found.append(pid)

    def __exit__(self, *exc):
        self.prctl(36, 0, 0, 0, 0)
        return False


class ServeInC(unittest.TestCase):
    """The zygote's loop in C (zygote_serve.cc, serve_in_c): the same protocol as serve()'s
    Python loop, the children forked as os.fork forks them and run by WaitingChild's side (the
    stand-in library for the sandbox, the real one for the loop)."""

    PAGES = 64
    REQUEST = {"workdir": "/nonexistent", "read_only": [], "argv": ["/usr/bin/python3", "runner", "p.py"],
               "env": [], "allow_weak": False,
               "limits": {"cpu_s": 1, "memory_bytes": 1 << 30, "file_bytes": 1 << 20, "open_files": 64}}

    def setUp(self):
        real = sandbox_library()
        if real is None:
            self.skipTest("TREX_SANDBOX_ENTER_LIB not set (warm_pool_test.cc sets it)")
        self.loop = z.c_loop(real)
        self.assertIsNotNone(self.loop)
        self.assertIsNone(z.c_loop(StandInLibrary(False)))  # a stand-in has none: the Python loop

    def start(self, lib, training=None, in_zygote=None, loop=False):
        loop = self.loop if loop is False else loop  # None: serve() picks (c_loop(lib))
        ctl, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                ctl.close()
                if in_zygote is not None:
                    in_zygote()
                status = z.serve(lib, zygote_end, "test", 0, False, training or ForcedTraining(None), loop=loop)
            finally:
                os._exit(status)
        zygote_end.close()
        self.assertEqual(json.loads(ctl.recv(1 << 16)), {"ready": True, "isolation": "test", "missing": 0,
                                                         "shared_netns": False, "workspace": False})
        return pid, ctl

    def stop(self, pid, ctl, code=0):
        ctl.close()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), code)

    def send_request(self, ctl, request=None):
        """Sends a request with its three descriptors; (stdout's and stderr's read ends)."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        chan_r, chan_w = os.pipe()
        socket.send_fds(ctl, [json.dumps(request or self.REQUEST).encode()], [out_w, err_w, chan_w])
        for fd in (out_w, err_w, chan_w, chan_r):
            os.close(fd)
        return out_r, err_r

    def run_one(self, ctl, wait=10):
        """One request: (exit code or -signal, timed_out, stdout, stderr, child pid)."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        chan_r, chan_w = os.pipe()
        socket.send_fds(ctl, [json.dumps(self.REQUEST).encode()], [out_w, err_w, chan_w])
        for fd in (out_w, err_w, chan_w, chan_r):
            os.close(fd)
        child = json.loads(ctl.recv(1 << 16))["pid"]
        out, err = os.read(out_r, 4096), os.read(err_r, 4096)
        ctl.send(json.dumps({"wait": wait}).encode())
        status = json.loads(ctl.recv(1 << 16))
        os.close(out_r)
        os.close(err_r)
        return os.waitstatus_to_exitcode(status["status"]), status["timed_out"], out, err, child

    def test_children_forked_after_the_answer_copy_ahead_the_first_does_not(self):
        buf, view, first = CopyAhead.buffer(self)
        lib = OwnPagesLibrary(view, first, 4096 * self.PAGES)
        pid, ctl = self.start(lib, PipeTraining([(first, 4096 * self.PAGES)]))
        try:
            runs = [self.run_one(ctl) for _ in range(3)]
        finally:
            self.stop(pid, ctl)
        self.assertEqual([r[:4] for r in runs], [(7, False, b"own 0 intact 1\n", b"")] +
                         [(7, False, b"own %d intact 1\n" % self.PAGES, b"")] * 2)
        self.assertEqual(len({r[4] for r in runs} | {pid, os.getpid()}), 5)  # a child of its own each
        del view

    def test_the_children_copy_ahead_first_thing_after_their_fork(self):
        # Before the interpreter's own after-fork work (its at-fork hooks run in it): the pages
        # are the child's own already when the first hook runs. A run that cannot be copied
        # (unmapped) first: the runs after it are still copied. Both ways of copying: one
        # process_madvise call where the kernel takes it, and one madvise per run.
        for one_call in (1, 0):
            with self.subTest(one_call=one_call):
                self.copy_ahead_first_thing(one_call)

    def copy_ahead_first_thing(self, one_call):
        setting = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_copy_ahead_one_call
        buf, view, first = CopyAhead.buffer(self)
        log_r, log_w = os.pipe()

        def owned():
            flags = page_flags(first, 4096 * self.PAGES)
            os.write(log_w, b"%d\n" % sum(1 for f in flags if f & PRESENT and f & EXCLUSIVE))

        lib = OwnPagesLibrary(view, first, 4096 * self.PAGES)
        training = PipeTraining([(4096, 4096), (first, 4096 * self.PAGES)])
        pid, ctl = self.start(lib, training, in_zygote=lambda: (setting(one_call), os.register_at_fork(after_in_child=owned)))
        try:
            runs = [self.run_one(ctl)[:4] for _ in range(3)]
        finally:
            self.stop(pid, ctl)
        os.close(log_w)
        hooks = os.read(log_r, 4096).split()
        os.close(log_r)
        self.assertEqual(runs, [(7, False, b"own 0 intact 1\n", b"")] +
                         [(7, False, b"own %d intact 1\n" % self.PAGES, b"")] * 2)
        # Each program's child and the one forked ahead of a fourth program (the zygote stops it).
        self.assertEqual(hooks, [b"0"] + [b"%d" % self.PAGES] * 3)
        del view

    def test_the_pages_most_surveyed_children_write_are_what_later_children_copy_ahead(self):
        # trex_zygote_survey (survey_in_c): the zygote reads the first 3 programs' children's
        # pagemaps while they run; pages 0 and 1 of the buffer, which 2 of the 3 write, are then
        # copied ahead by every later child, and none of the pages only one wrote (2, 3, 4).
        # Forking early, the child forked beside the third program was forked before the list was
        # made and copies nothing. Where io_uring can pin them (pin_runs), the pages are pinned in
        # the zygote and each later child gets its copies at the fork; else (and with pinning
        # turned off) it copies them ahead: either way it owns them before its program runs. No
        # child holds a descriptor of a pagemap or of the zygote's io_uring.
        for early, pin in itertools.product((0, 1), (1, 0)):
            with self.subTest(early=early, pin=pin):
                self.survey(early, pin)

    def survey(self, early, pin):
        lib_path = os.environ["TREX_SANDBOX_ENTER_LIB"]
        buf, view, first = CopyAhead.buffer(self)
        pages = [(first, 4096 * self.PAGES)]

        class Writes(StandInLibrary):
            # The workdir names the buffer's pages this program writes; it reports the pages it
            # owned before its writes (the copies made ahead) and any pagemap descriptor it holds.
            def trex_sandbox_enter(self, *args):
                flags = page_flags(first, 4096 * ServeInC.PAGES)
                own = [i for i, f in enumerate(flags) if f & PRESENT and f & EXCLUSIVE]
                maps = []
                for fd in os.listdir("/proc/self/fd"):
                    try:
                        link = os.readlink("/proc/self/fd/" + fd)
                    except FileNotFoundError:
                        continue  # the listing's own descriptor, closed since
                    if link.endswith("/pagemap") or "io_uring" in link:
                        maps.append(link)
                pinned = ctypes.CDLL(lib_path).trex_zygote_pinned_pages(-1)  # the zygote's, as at the fork
                for i in filter(None, args[0].decode().split("/")[-1].split(",")):
                    view[int(i) * 4096 + 1] = 1
                time.sleep(0.05)  # sampled after its writes (every millisecond)
                os.write(args[7], json.dumps([own, maps, pinned]).encode())
                os._exit(7)

        def set_up():
            ctypes.CDLL(lib_path).trex_zygote_fork_early(early)
            ctypes.CDLL(lib_path).trex_zygote_pinned_pages(pin)
            self.assertTrue(z.survey_in_c(ctypes.CDLL(lib_path), pages, children=3, at_least=2))

        pid, ctl = self.start(Writes(prepare_fails=False), in_zygote=set_up)
        seen = []
        try:
            for written in ("0,1,2", "0,1,3", "1,0,4", "", "3", ""):
                request = dict(self.REQUEST, workdir="/nonexistent/" + written)
                out_r, err_r = self.send_request(ctl, request)
                self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
                out = os.read(out_r, 4096)
                ctl.send(b'{"wait":10}')
                status = json.loads(ctl.recv(1 << 16))
                self.assertEqual((os.waitstatus_to_exitcode(status["status"]), status["timed_out"]), (7, False))
                os.close(out_r)
                os.close(err_r)
                seen.append(json.loads(out))
        finally:
            self.stop(pid, ctl)
        pinned = 2 if pin and io_uring_pins() else 0
        listed = [[0, 1], [], pinned]
        self.assertEqual(seen, [[[], [], 0]] * 3 + [listed if not early else [[], [], 0]] + [listed] * 2)
        del view

    def test_a_page_written_late_in_a_long_program_is_still_seen(self):
        # Past its first 100 ms a surveyed child is sampled less often (sample_interval_ms: a
        # fiftieth of its age, about 6 ms here; the 100 ms cap starts past 5 s and is not reached),
        # never not at all: a page it writes after 300 ms, a second before its exit, is listed.
        lib_path = os.environ["TREX_SANDBOX_ENTER_LIB"]
        buf, view, first = CopyAhead.buffer(self)

        class WritesLate(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                own = [i for i, f in enumerate(page_flags(first, 4096 * ServeInC.PAGES)) if f & PRESENT and f & EXCLUSIVE]
                if args[0].endswith(b"/late"):
                    time.sleep(0.3)
                    view[5 * 4096 + 1] = 1
                    time.sleep(1.0)  # many samples, even with the zygote descheduled for a while
                os.write(args[7], json.dumps(own).encode())
                os._exit(7)

        def set_up():
            self.assertTrue(z.survey_in_c(ctypes.CDLL(lib_path), [(first, 4096 * self.PAGES)], children=1, at_least=1))

        pid, ctl = self.start(WritesLate(prepare_fails=False), in_zygote=set_up)
        seen = []
        try:
            for workdir in ("/nonexistent/late", "/nonexistent/"):
                out_r, err_r = self.send_request(ctl, dict(self.REQUEST, workdir=workdir))
                self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
                seen.append(json.loads(os.read(out_r, 4096)))
                ctl.send(b'{"wait":10}')
                self.assertEqual(os.waitstatus_to_exitcode(json.loads(ctl.recv(1 << 16))["status"]), 7)
                os.close(out_r)
                os.close(err_r)
        finally:
            self.stop(pid, ctl)
        self.assertEqual(seen, [[], [5]])
        del view

    def test_a_child_that_exited_before_a_wait_of_zero_has_not_timed_out(self):
        # The evaluator sends {"wait": 0} when it reaches the reap past its own wall clock; a child
        # that had exited long before is not a timeout, surveyed (its pagemap read while it runs)
        # or not.
        lib_path = os.environ["TREX_SANDBOX_ENTER_LIB"]
        buf, view, first = CopyAhead.buffer(self)

        class Exits(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                os.write(args[7], b"x")
                os._exit(7)

        for survey in (False, True):
            with self.subTest(survey=survey):
                def set_up():
                    if survey:
                        self.assertTrue(z.survey_in_c(ctypes.CDLL(lib_path), [(first, 4096 * self.PAGES)],
                                                      children=1, at_least=1))

                pid, ctl = self.start(Exits(prepare_fails=False), in_zygote=set_up)
                try:
                    out_r, err_r = self.send_request(ctl, dict(self.REQUEST, workdir="/nonexistent/"))
                    self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
                    self.assertEqual(os.read(out_r, 16), b"x")
                    time.sleep(0.2)  # it has exited well before the wait
                    ctl.send(b'{"wait":0}')
                    answer = json.loads(ctl.recv(1 << 16))
                    os.close(out_r)
                    os.close(err_r)
                finally:
                    self.stop(pid, ctl)
                self.assertEqual(os.waitstatus_to_exitcode(answer["status"]), 7)
                self.assertFalse(answer["timed_out"])
        del view

    def test_a_survey_out_of_range_is_refused_and_changes_nothing(self):
        register = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_survey
        register.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]

        for runs, children, at_least in (([(4096, 4096)], 3, 4), ([(4096, 4096)], 0, 0), ([(4096, 4096)], 256, 1),
                                         ([(4097, 4096)], 3, 2), ([(4096, 100)], 3, 2), ([(4096, 0)], 3, 2), ([], 3, 2)):
            array = (z.Iovec * max(1, len(runs)))(*[z.Iovec(a, n) for a, n in runs])
            self.assertEqual(register(ctypes.addressof(array), len(runs), children, at_least), -1)
        self.assertFalse(z.survey_in_c(StandInLibrary(False), [(4096, 4096)]))  # no C loop: the training child
        self.assertFalse(z.survey_in_c(sandbox_library(), []))  # nothing to copy: no survey

    def test_a_failed_prepare_runs_nothing_and_says_why(self):
        pid, ctl = self.start(StandInLibrary(prepare_fails=True))
        try:
            code, timed_out, out, err, _ = self.run_one(ctl)
        finally:
            self.stop(pid, ctl)
        self.assertEqual((code, timed_out, out), (z.EXIT_SANDBOX, False, b""))
        self.assertEqual(err, b"trex sandbox: unshare(CLONE_NEWNET): Operation not permitted\n")

    def test_a_request_without_its_three_descriptors_is_refused_and_the_next_runs(self):
        pid, ctl = self.start(StandInLibrary(prepare_fails=False))
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            socket.send_fds(ctl, [json.dumps(self.REQUEST).encode()], [null])
            os.close(null)
            self.assertEqual(json.loads(ctl.recv(1 << 16)), {"error": "expected 3 descriptors, got 1"})
            self.assertEqual(self.run_one(ctl)[:4], (7, False, b"entered prepared=1\n", b""))
        finally:
            self.stop(pid, ctl)

    def test_a_child_past_its_wall_clock_is_killed_with_what_it_started(self):
        class Sleeps(StandInLibrary):
            def trex_sandbox_prepare(self, buf, length):
                os.setsid()  # a group of its own, as the real library's prepare makes
                return 0

            def trex_sandbox_enter(self, *args):
                grandchild = os.fork()  # in the child's group: killed with it
                if grandchild == 0:
                    os.write(args[8], b"%d\n" % os.getpid())  # stderr
                    time.sleep(60)
                    os._exit(0)
                time.sleep(60)
                os._exit(0)

        pid, ctl = self.start(Sleeps(prepare_fails=False))
        grandchildren = []
        try:
            for _ in range(2):  # and the loop goes on after the first
                out_r, out_w = os.pipe()
                err_r, err_w = os.pipe()
                chan_r, chan_w = os.pipe()
                socket.send_fds(ctl, [json.dumps(self.REQUEST).encode()], [out_w, err_w, chan_w])
                for fd in (out_w, err_w, chan_w, chan_r):
                    os.close(fd)
                self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
                grandchildren.append(int(os.read(err_r, 64)))
                started = time.monotonic()
                ctl.send(b'{"wait":0.3}')
                status = json.loads(ctl.recv(1 << 16))
                self.assertGreaterEqual(time.monotonic() - started, 0.25)
                self.assertEqual((os.waitstatus_to_exitcode(status["status"]), status["timed_out"]), (-9, True))
                # Every writer gone: the grandchild too (it exited; it held both pipes).
                self.assertEqual(os.read(out_r, 64), b"")
                self.assertEqual(os.read(err_r, 64), b"")
                os.close(out_r)
                os.close(err_r)
        finally:
            self.stop(pid, ctl)
        self.assertEqual(len(set(grandchildren)), 2)

    def test_a_waiting_child_that_died_is_replaced_for_the_request(self):
        log_r, log_w = os.pipe()
        pid, ctl = self.start(StandInLibrary(prepare_fails=False, log_fd=log_w))
        try:
            first = int(os.read(log_r, 64).split()[0])  # the waiting child made its layers
            os.kill(first, signal.SIGKILL)
            while True:  # dead (a zombie: its socket closed) before the request is handed
                try:
                    with open("/proc/%d/stat" % first) as f:
                        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                            break
                except FileNotFoundError:
                    break
                time.sleep(0.005)
            code, timed_out, out, err, child = self.run_one(ctl)
            self.assertEqual((code, timed_out, out, err), (7, False, b"entered prepared=1\n", b""))
            self.assertNotEqual(child, first)
        finally:
            self.stop(pid, ctl)
            os.close(log_r)
            os.close(log_w)

    def test_forking_early_the_next_child_is_made_while_a_program_runs_else_after_its_status(self):
        # trex_zygote_fork_early(1) (FORK_EARLY, warm_fork_early): the loop forks the next
        # program's child once it has sent {"pid": N}, and that child makes its layers while the
        # program still runs; 0 (the default): only after the program's status. Program 1
        # blocks on its channel (the test holds the other end) meanwhile.
        for early in (1, 0):
            with self.subTest(early=early):
                self.next_child_during_a_program(early)

    def next_child_during_a_program(self, early):
        setting = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_fork_early
        log_r, log_w = os.pipe()

        class Blocks(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                try:
                    os.read(args[9], 1)  # the channel's read end: until the test closes its writer
                except OSError:
                    pass  # run_one hands a write end: nothing to wait for
                os.write(args[7], b"entered prepared=%d\n" % args[11])
                os._exit(7)

        def logged(count, seconds):
            pids = []
            while len(pids) < count:
                ready, _, _ = select.select([log_r], [], [], seconds)
                if not ready:
                    break
                pids += [int(p) for p in os.read(log_r, 4096).split()]
            return pids

        pid, ctl = self.start(Blocks(prepare_fails=False, log_fd=log_w), in_zygote=lambda: setting(early))
        try:
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            chan_r, chan_w = os.pipe()
            socket.send_fds(ctl, [json.dumps(self.REQUEST).encode()], [out_w, err_w, chan_r])
            for fd in (out_w, err_w, chan_r):
                os.close(fd)
            child = json.loads(ctl.recv(1 << 16))["pid"]
            # Forking early, the second prepare comes while program 1 runs; else none comes in a
            # second after the first (a bound that only ever lets a late fork pass, never fails an
            # early one). The first always comes, so it gets a loaded machine's time. (Either may
            # log first: program 1's child may be scheduled after the next one.)
            pids = logged(1, 20)
            pids += logged(2 - len(pids), 20 if early else 1)  # one read may have brought both
            with open("/proc/%d/stat" % child) as f:
                self.assertNotIn(f.read().rsplit(")", 1)[1].split()[0], ("Z", "X"))  # program 1 still runs
            self.assertEqual(len(pids), 2 if early else 1, pids)
            self.assertIn(child, pids)
            pids.remove(child)
            os.close(chan_w)
            self.assertEqual(os.read(out_r, 64), b"entered prepared=1\n")
            ctl.send(b'{"wait":10}')
            status = json.loads(ctl.recv(1 << 16))
            self.assertEqual((os.waitstatus_to_exitcode(status["status"]), status["timed_out"]), (7, False))
            os.close(out_r)
            os.close(err_r)
            if not early:
                pids += logged(1, 20)  # forked after the status
            # Program 2 runs in the child forked for it, a prepared one.
            self.assertEqual(self.run_one(ctl), (7, False, b"entered prepared=1\n", b"", pids[0]))
        finally:
            self.stop(pid, ctl)
            os.close(log_r)
            os.close(log_w)

    def test_a_request_no_child_can_be_forked_for_is_answered_so(self):
        # Every fork of the zygote fails (RLIMIT_NPROC 0, as a user it applies to: root is exempt):
        # no child waits, and none can be forked for the request. The answer is whole JSON.
        def no_forks():
            import resource
            resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
            if os.geteuid() == 0:
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)

        pid, ctl = self.start(StandInLibrary(prepare_fails=False), in_zygote=no_forks)
        try:
            for _ in range(2):  # and the loop goes on
                out_r, err_r = self.send_request(ctl)
                self.assertEqual(json.loads(ctl.recv(1 << 16)), {"error": "no child for the request"})
                self.assertEqual(os.read(out_r, 64), b"")  # no child holds its descriptors
                os.close(out_r)
                os.close(err_r)
        finally:
            self.stop(pid, ctl)

    def test_a_child_does_not_find_the_previous_program_s_request_in_the_loop_s_memory(self):
        # The loop's buffer for the requests (a static of the library) is copied into every child
        # forked after a request: program 2 scans the library's mappings for program 1's request.
        path = os.environ["TREX_SANDBOX_ENTER_LIB"]
        tag = b"TAG_OF_PROGRAM_ONE_2f9c1e"

        class Scans(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                found = 0
                name = os.path.realpath(path)
                with open("/proc/self/maps") as f:
                    maps = [line.split() for line in f]
                mem = os.open("/proc/self/mem", os.O_RDONLY)
                # The anonymous mapping after the file's is its .bss only up to the .bss's end:
                # the kernel merges an arena of the interpreter's that lands right after it
                # into the same mapping, and that arena may hold the test's own copies of `tag`.
                base = min(int(f[0].split("-")[0], 16) for f in maps if len(f) > 5 and f[5] == name and int(f[2], 16) == 0)
                end_of_bss = base + elf_bss_end(name)
                prev_end = None
                for fields in maps:
                    lo, hi = (int(x, 16) for x in fields[0].split("-"))
                    # its file's mappings and the anonymous one right after them (its .bss)
                    if (len(fields) > 5 and fields[5] == name) or (len(fields) == 5 and lo == prev_end):
                        if len(fields) == 5:
                            hi = min(hi, max(lo, end_of_bss))
                        if "r" in fields[1]:
                            found += os.pread(mem, hi - lo, lo).count(tag)
                        prev_end = hi if len(fields) > 5 else None
                    else:
                        prev_end = None
                os.write(args[7], b"found %d\n" % found)
                os._exit(7)

        # Both ways: forking early, program 2's child is forked while program 1 runs, and must
        # not find program 1's request either (it is erased before that fork).
        for early in (0, 1):
            with self.subTest(early=early):
                self.scan_for_the_previous_request(Scans, tag, early)

    def scan_for_the_previous_request(self, Scans, tag, early):
        setting = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_fork_early
        pid, ctl = self.start(Scans(prepare_fails=False), in_zygote=lambda: setting(early))
        try:
            first = dict(self.REQUEST, workdir="/nonexistent/" + tag.decode(), env=["HOME=/" + tag.decode()])
            out_r, err_r = self.send_request(ctl, first)
            self.assertIn("pid", json.loads(ctl.recv(1 << 16)))
            os.read(out_r, 64)  # its own request it holds: it has run
            ctl.send(b'{"wait":10}')
            json.loads(ctl.recv(1 << 16))
            os.close(out_r)
            os.close(err_r)
            self.assertEqual(self.run_one(ctl)[:4], (7, False, b"found 0\n", b""))
        finally:
            self.stop(pid, ctl)

    def test_a_wait_message_of_another_shape_kills_the_child_and_ends_the_zygote(self):
        # As serve()'s Python loop does (it raises): the evaluator then finds the socket closed.
        class Waits(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                os.write(args[7], b"running\n")
                time.sleep(60)
                os._exit(0)

        setting = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_fork_early

        def quiet(early):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            setting(early)

        # Forking early, a next child already waits when the wait message comes: it goes too.
        for early, message in itertools.product((0, 1), (b'{"status":1}', b'{"wait":"x"}', b'{"wait":-1}')):
            with self.subTest(early=early, message=message), OrphansComeHere() as orphans:
                pid, ctl = self.start(Waits(prepare_fails=False), in_zygote=lambda: quiet(early))
                out_r, err_r = self.send_request(ctl)
                child = json.loads(ctl.recv(1 << 16))["pid"]
                self.assertEqual(os.read(out_r, 64), b"running\n")
                ctl.send(message)
                self.assertEqual(ctl.recv(1 << 16), b"")  # no status: the zygote is gone
                self.assertEqual(os.read(out_r, 64), b"")  # and the child with it
                os.close(out_r)
                os.close(err_r)
                self.stop(pid, ctl, code=1)  # the exception's exit
                with self.assertRaises(ProcessLookupError):
                    os.kill(child, 0)
                self.assertEqual(orphans.left(), [])  # no waiting child outlived the zygote

    def test_the_zygote_s_serve_runs_the_library_s_loop_and_the_python_one_when_it_cannot_start(self):
        # serve() as main() calls it (no loop named): a library with trex_zygote_serve runs the
        # C loop; a loop that cannot start (its fork hooks missing: -1) leaves it to Python's.
        real = os.environ["TREX_SANDBOX_ENTER_LIB"]

        class Reports(StandInLibrary):
            _name = real  # what ctypes.CDLL(real) has: c_loop finds the library's loop

            def trex_sandbox_enter(self, *args):
                names, frame = [], sys._getframe()
                while frame is not None:
                    names.append(frame.f_code.co_name)
                    frame = frame.f_back
                os.write(args[7], b"serve_in_c %d\n" % ("serve_in_c" in names))
                os._exit(7)

        calls = []

        def cannot_start(*args):
            calls.append(args)
            return z.SERVE_FAILED

        for loop, in_c in ((None, 1), (cannot_start, 0)):
            with self.subTest(loop=loop):
                pid, ctl = self.start(Reports(prepare_fails=False), loop=loop)
                try:
                    runs = [self.run_one(ctl)[:4] for _ in range(2)]
                finally:
                    self.stop(pid, ctl)
                self.assertEqual(runs, [(7, False, b"serve_in_c %d\n" % in_c, b"")] * 2)

    def test_when_the_evaluator_goes_the_waiting_child_is_reaped_and_the_zygote_exits(self):
        setting = ctypes.CDLL(os.environ["TREX_SANDBOX_ENTER_LIB"]).trex_zygote_fork_early

        class Waits(StandInLibrary):
            def trex_sandbox_enter(self, *args):
                os.write(args[7], b"running\n")
                time.sleep(60)
                os._exit(0)

        # Between programs (the first waiting child), and after a program's {"pid": N} (the
        # program is killed; forking early, the next child already waits and must be reaped).
        for early, after_pid in ((0, False), (0, True), (1, False), (1, True)):
            with self.subTest(early=early, after_pid=after_pid), OrphansComeHere() as orphans:
                log_r, log_w = os.pipe()
                pid, ctl = self.start(Waits(prepare_fails=False, log_fd=log_w), in_zygote=lambda: setting(early))
                waiting = [int(os.read(log_r, 64).split()[0])]
                if after_pid:
                    out_r, err_r = self.send_request(ctl)
                    child = json.loads(ctl.recv(1 << 16))["pid"]
                    self.assertEqual(child, waiting[0])
                    self.assertEqual(os.read(out_r, 64), b"running\n")
                    if early:  # the next child, forked while the program runs
                        waiting.append(int(os.read(log_r, 64).split()[0]))
                    os.close(out_r)
                    os.close(err_r)
                os.close(log_r)
                os.close(log_w)
                self.stop(pid, ctl)  # exit status 0
                for gone in waiting:
                    with self.assertRaises(ProcessLookupError):
                        os.kill(gone, 0)  # reaped by the zygote before it exited
                self.assertEqual(orphans.left(), [])


def c_environment():
    """The C library's environment (what getenv and a child process would see), in order."""
    environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    pairs, i = [], 0
    while environ[i] is not None:
        pairs.append(environ[i].decode())
        i += 1
    return pairs


def code_file_mappings():
    """/proc/self/maps's mappings of the file that holds the interpreter's machine code (the one
    PyEval_EvalCode is in: python3, or libpython): (start, end, perms), and that function's address."""
    at = ctypes.cast(ctypes.pythonapi.PyEval_EvalCode, ctypes.c_void_p).value
    rows = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            rows.append((lo, hi, fields[1], fields[5].rstrip("\n") if len(fields) == 6 else ""))
    path = next(r[3] for r in rows if r[0] <= at < r[1])
    return [r[:3] for r in rows if r[3] == path], at


def parts_on_huge_pages():
    """The 2 MB parts huge_text moves, restated from huge_text.cc's rule: each 2 MB-aligned,
    2 MB-long range inside the read-only mappings that adjoin the interpreter's code (the r-xp
    mapping PyEval_EvalCode is in) that holds some of that code."""
    maps, at = code_file_mappings()
    code = next(m for m in maps if m[0] <= at < m[1])
    lo, hi = code[0], code[1]
    for start, end, perms in sorted(maps, reverse=True):  # grow down, then up, over neighbours
        if end == lo and perms[0] == "r" and "w" not in perms:
            lo = start
    for start, end, perms in sorted(maps):
        if start == hi and perms[0] == "r" and "w" not in perms:
            hi = end
    huge = 2 << 20
    parts, part = [], (lo + huge - 1) & ~(huge - 1)
    while part + huge <= hi:
        if part < code[1] and part + huge > code[0]:
            parts.append(part)
        part += huge
    return parts, (lo, hi)


def anonymous_huge_kb(address):
    """(perms, path, AnonHugePages kB) of the mapping holding `address`, from /proc/self/smaps."""
    perms, path, inside = None, None, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and all(c in "0123456789abcdef-" for c in head[0]):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                inside = lo <= address < hi
                if inside:
                    perms, path = head[1], head[5] if len(head) > 5 else ""
            elif inside and head[0] == "AnonHugePages:":
                return perms, path, int(head[1])
    return perms, path, None


def in_a_child(check):
    """Runs check() in a forked child (huge_text changes the mappings of the process it runs in)
    and returns what it returned (JSON), or fails the caller with the child's error."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(r)
            try:
                out = {"ok": check()}
            except BaseException as e:  # reported to the parent, which fails
                out = {"error": "%s: %s" % (type(e).__name__, e)}
            os.write(w, json.dumps(out).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(data)
    if "error" in out:
        raise AssertionError(out["error"])
    return out["ok"]


def thp_possible():
    """Whether this process may get transparent huge pages at all: the system's setting is not
    "never" (a kernel or sandbox without the file has none), and THP is not disabled for this
    process (PR_SET_THP_DISABLE, inherited from whatever started the tests)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            if "[never]" in f.read():
                return False
    except OSError:
        return False
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("THP_enabled:"):
                return line.split()[1] != "0"
    return True


class HugeText(unittest.TestCase):
    """The zygote's machine code onto 2 MB pages (huge_text, huge_text.cc): the same bytes at
    the same addresses, read-and-execute only, each part one 2 MB page in the interpreter and in
    every child it forks; nothing moves where the process may have no 2 MB pages."""

    def setUp(self):
        self.lib = sandbox_library()
        if self.lib is None:
            self.skipTest("TREX_SANDBOX_ENTER_LIB not set (warm_pool_test.cc sets it)")
        self.thp = thp_possible()

    def test_the_code_moves_onto_2mb_pages_with_the_same_bytes_in_children_too(self):
        lib = self.lib

        def check():
            parts, (lo, hi) = parts_on_huge_pages()
            before = ctypes.string_at(lo, hi - lo)
            moved = z.huge_text(lib)
            seen = [anonymous_huge_kb(p) for p in parts]
            same = ctypes.string_at(lo, hi - lo) == before
            import fractions  # new code runs through the moved parts
            runs = str(fractions.Fraction(3, 6)) == "1/2"
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    ok = all(anonymous_huge_kb(p)[2] == 2048 for p, kb in zip(parts, seen)
                             if kb == ("r-xp", "", 2048)) and sum(range(10)) == 45
                    code = 0 if ok else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            return {"parts": len(parts), "moved": moved, "seen": seen, "same": same, "runs": runs,
                    "child": os.waitstatus_to_exitcode(status)}

        out = in_a_child(check)
        # Debian's /usr/bin/python3.11 (non-PIE, 2.8 MB of code at 0x41f000) has two such parts;
        # pyenv's interpreters have theirs in libpython, wherever the loader put it.
        # A part moves only where the kernel gave its copy a 2 MB page, which a fragmented or
        # loaded machine may refuse (the THP fault and MADV_COLLAPSE can both fail): each part is
        # either moved (one anonymous 2 MB page, read-and-execute) or still the file's mapping,
        # and the count says how many moved. Where no 2 MB page is possible, none moves.
        moved_parts = [kb for kb in out["seen"] if kb == ["r-xp", "", 2048]]
        self.assertEqual(out["moved"], len(moved_parts), out)
        self.assertLessEqual(out["moved"], out["parts"] if self.thp else 0, out)
        for perms, path, kb in out["seen"]:
            if [perms, path, kb] != ["r-xp", "", 2048]:
                self.assertNotEqual(path, "", out)  # not moved: still the file's mapping
        self.assertTrue(out["same"], out)
        self.assertTrue(out["runs"], out)
        self.assertEqual(out["child"], 0, out)
        if self.thp and out["moved"] < out["parts"]:
            print("HugeText: %d of %d parts moved (no 2 MB page for the rest on this machine now)"
                  % (out["moved"], out["parts"]), file=sys.stderr)
        # Debian's python3 has two parts; this machine's bench (bench/results/oreval_pool_s20.md)
        # needs them moved: TREX_REQUIRE_HUGE_TEXT=1 makes a part left behind a failure.
        if os.environ.get("TREX_REQUIRE_HUGE_TEXT") == "1":
            self.assertEqual(out["moved"], out["parts"] if self.thp else 0, out)

    def test_where_the_process_may_have_no_2mb_pages_nothing_moves(self):
        lib = self.lib

        def check():
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(41, 1, 0, 0, 0) != 0:  # PR_SET_THP_DISABLE
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_THP_DISABLE)")
            before = code_file_mappings()
            moved = z.huge_text(lib)
            return {"moved": moved, "unchanged": code_file_mappings() == before}

        out = in_a_child(check)
        self.assertEqual(out, {"moved": 0, "unchanged": True})


def read_only_file_mappings():
    """/proc/self/maps's private read-only file mappings: (start, end, perms, path)."""
    rows = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/") and fields[1] in ("r--p", "r-xp"):
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                rows.append((lo, hi, fields[1], fields[5].rstrip("\n")))
    return rows


def file_pages_without_anonymous_memory():
    """Starts of the private read-only file mappings that have pages mapped and no anonymous
    memory (/proc/self/smaps): the ones fork_file_pages.cc changes."""
    found, head = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                head = None
                if len(fields) == 6 and fields[5].startswith("/") and fields[1] in ("r--p", "r-xp"):
                    head = {"start": int(fields[0].split("-")[0], 16), "rss": 0}
            elif head is not None and fields[0] == "Rss:":
                head["rss"] = int(fields[1])
            elif head is not None and fields[0] == "Anonymous:" and head["rss"] > 0 and fields[1] == "0":
                found.append(head["start"])
    return found


def protections_at(addresses):
    """The perms of the mapping that holds each address (None where none does)."""
    rows = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            rows.append((lo, hi, fields[1]))
    return [next((perms for lo, hi, perms in rows if lo <= a < hi), None) for a in addresses]


def libm_code_pages():
    """Pages of libm's machine code this process has mapped (present in its page table), after
    calling into it; a child's own Python touches none of them (the test's child reads its
    pagemap only)."""
    import math

    sum(math.erf(x / 7) + math.lgamma(1 + x) + math.atan2(x, 3) + math.cbrt(x) for x in range(50))
    for lo, hi, perms, path in read_only_file_mappings():
        if perms == "r-xp" and os.path.basename(path).startswith("libm."):
            return [lo + (i << 12) for i, e in enumerate(page_flags(lo, hi - lo)) if e & PRESENT]
    return []


class ForkFilePages(unittest.TestCase):
    """The interpreter's read-only file mappings (fork_file_pages, fork_file_pages.cc): after
    the call, a child it forks finds mapped every page of them the interpreter had mapped (fork
    copied their entries), where before it found them unmapped until its own first touch; same
    bytes, same protections, nothing writable; the wrapper fails closed on the library's -1."""

    def setUp(self):
        self.lib = sandbox_library()
        if self.lib is None:
            self.skipTest("TREX_SANDBOX_ENTER_LIB not set (warm_pool_test.cc sets it)")

    def test_a_child_finds_the_interpreters_read_only_file_pages_mapped(self):
        lib = self.lib

        def present_in_a_child(pages):
            pid = os.fork()
            if pid == 0:
                code = 255
                try:
                    code = sum(1 for page in pages if page_flags(page, 4096)[0] & PRESENT)
                finally:
                    os._exit(min(code, 254))
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)

        def check():
            pages = libm_code_pages()[:200]
            before = read_only_file_mappings()
            data = [ctypes.string_at(lo, min(hi - lo, 1 << 16)) for lo, hi, _, _ in before]
            without = present_in_a_child(pages)
            changed = z.fork_file_pages(lib)
            with_it = present_in_a_child(pages)
            starts = [lo for lo, _, _, _ in before] + [hi - 1 for _, hi, _, _ in before]
            perms = [p for _, _, p, _ in before] * 2
            return {"pages": len(pages), "without": without, "with": with_it, "changed": changed,
                    "same_perms": protections_at(starts) == perms,
                    "same_bytes": data == [ctypes.string_at(lo, min(hi - lo, 1 << 16)) for lo, hi, _, _ in before]}

        out = in_a_child(check)
        self.assertGreater(out["pages"], 0, out)
        self.assertGreater(out["changed"], 0, out)
        self.assertLess(out["without"], out["pages"], out)  # the control: not copied by the fork before
        self.assertEqual(out["with"], min(out["pages"], 254), out)
        self.assertTrue(out["same_perms"], out)
        self.assertTrue(out["same_bytes"], out)

    def test_a_second_call_changes_nothing_more(self):
        # Every mapping that had pages at the first call has anonymous memory after it, so no
        # later call changes it again. (A later call may still change a mapping whose first page
        # was touched only after the first call: the test's own code can touch one.)
        lib = self.lib

        def check():
            before = file_pages_without_anonymous_memory()
            changed = z.fork_file_pages(lib)
            after = file_pages_without_anonymous_memory()
            return [changed, before, after]

        out = in_a_child(check)
        changed, before, after = out
        self.assertGreaterEqual(changed, len(before), out)
        self.assertGreater(len(before), 0, out)
        self.assertEqual(sorted(set(before) & set(after)), [], out)

    def test_nothing_changes_while_another_thread_runs(self):
        # ctypes releases the GIL for the call: a second thread could write to a mapping in the
        # moment it is writable, so the library leaves every mapping as it was.
        import threading

        lib = self.lib

        def check():
            release = threading.Event()
            other = threading.Thread(target=release.wait)
            other.start()
            try:
                with_thread = z.fork_file_pages(lib)
            finally:
                release.set()
                other.join()
            return [with_thread, z.fork_file_pages(lib)]

        out = in_a_child(check)
        self.assertEqual(out[0], 0, out)
        self.assertGreater(out[1], 0, out)  # the control: alone again, it changes mappings

    def test_a_protection_not_restored_ends_the_interpreter_and_no_library_changes_nothing(self):
        class Call:  # takes argtypes and restype as a C function does
            def __call__(self):
                return -1

        class Fails:
            trex_zygote_fork_file_pages = Call()

        with self.assertRaises(RuntimeError):
            z.fork_file_pages(Fails())
        self.assertEqual(z.fork_file_pages(StandInLibrary(False)), 0)


class AttachWorkspace(unittest.TestCase):
    """attach_workspace (WORKSPACE and WORKSPACE_FD, argv[6] and argv[7] from warm_pool.cc):
    True only where the library attached the mount; the descriptor is closed whatever happens,
    so that no child inherits the mount's descriptor. (The library's own attach, and its refusal
    without the privilege, are tests/oreval/workspace_test.cc's.)"""

    def argv(self, fd, where="/nonexistent/work"):
        return ["zygote", "lib", "10", "0", "1", "0", where, str(fd)]

    def test_none_given_is_none_attached(self):
        self.assertFalse(z.attach_workspace(StandInLibrary(False), ["zygote", "lib", "10", "0", "1", "0"]))
        self.assertFalse(z.attach_workspace(StandInLibrary(False), ["zygote", "lib", "10", "0", "1", "0", "", ""]))

    def test_attached_by_the_bootstrap(self):
        self.assertTrue(z.attach_workspace(StandInLibrary(False), self.argv("attached")))

    def test_the_descriptor_is_closed_whether_attached_or_not(self):
        class Attach:
            """The library's function as ctypes gives it (its argtypes and restype are set)."""

            def __init__(self, answer):
                self.answer, self.seen = answer, None

            def __call__(self, fd, path, buf, length):
                self.seen = (fd, path)
                return self.answer

        for answer, attached in ((0, True), (-1, False)):
            lib = StandInLibrary(False)
            lib.trex_sandbox_attach_workspace = Attach(answer)
            fd = os.open(os.devnull, os.O_RDONLY)
            self.assertEqual(z.attach_workspace(lib, self.argv(fd)), attached)
            self.assertEqual(lib.trex_sandbox_attach_workspace.seen, (fd, b"/nonexistent/work"))
            with self.assertRaises(OSError):
                os.fstat(fd)
        fd = os.open(os.devnull, os.O_RDONLY)
        self.assertFalse(z.attach_workspace(StandInLibrary(False), self.argv(fd)))  # no such function
        with self.assertRaises(OSError):
            os.fstat(fd)


class Environment(unittest.TestCase):
    """A child's environment is exactly its request's, in the request's order, in os.environ
    and in the C library's (a fresh interpreter given that environment has it so), whether the
    zygote's own environment is the start of the request's (then only what differs is set) or
    not (then it is cleared and set)."""

    def setUp(self):
        self.saved = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)

    def check(self, start, wanted):
        os.environ.clear()
        for pair in start:
            name, _, value = pair.partition("=")
            os.environ[name] = value
        z.set_environment(wanted)
        self.assertEqual(["%s=%s" % item for item in os.environ.items()], wanted)
        self.assertEqual(c_environment(), wanted)

    def test_the_zygote_s_names_first_only_what_differs_is_set(self):
        self.check(["PATH=/usr/bin:/bin", "HOME=/tmp/module", "LANG=C.UTF-8"],
                   ["PATH=/usr/bin:/bin", "HOME=/tmp/work", "LANG=C.UTF-8", "TREX_EVAL_CHANNEL_FD=3"])
        self.check(["A=1"], ["A=1"])
        self.check([], ["A=1", "B=x=y", "C="])

    def test_other_names_or_another_order_are_cleared_and_set(self):
        self.check(["PATH=/usr/bin:/bin", "LD_BIND_NOW=1", "HOME=/tmp/module"], ["PATH=/usr/bin:/bin", "HOME=/w"])
        self.check(["HOME=/tmp/module", "PATH=/usr/bin:/bin"], ["PATH=/usr/bin:/bin", "HOME=/w"])
        self.check(["A=1", "B=2"], ["A=1"])
        self.check(["A=1"], [])

    def test_the_warm_up_of_the_request_path_changes_nothing(self):
        # It runs in the zygote before the first fork: every child inherits what it leaves.
        self.check([], ["PATH=/usr/bin:/bin", "HOME=/tmp/module", "LANG=C.UTF-8"])
        fds = sorted(os.listdir("/proc/self/fd"))
        z.warm_request_path()
        self.assertEqual(["%s=%s" % item for item in os.environ.items()],
                         ["PATH=/usr/bin:/bin", "HOME=/tmp/module", "LANG=C.UTF-8"])
        self.assertEqual(c_environment(), ["PATH=/usr/bin:/bin", "HOME=/tmp/module", "LANG=C.UTF-8"])
        self.assertEqual(sorted(os.listdir("/proc/self/fd")), fds)


class RunnerWarmUp(unittest.TestCase):
    def test_it_leaves_no_model_file_descriptor_or_argument_behind(self):
        import sys

        from trex_modeling import model as core

        fds, argv, cwd = sorted(os.listdir("/proc/self/fd")), list(sys.argv), os.getcwd()
        files = sorted(os.listdir(cwd))
        z.trex_eval_warmup.warm_up_runner()
        self.assertIsNone(core._last[0])
        self.assertIsNone(core._solved[0])
        self.assertEqual(sorted(os.listdir("/proc/self/fd")), fds)
        self.assertEqual(sys.argv, argv)
        self.assertEqual(os.getcwd(), cwd)
        self.assertEqual(sorted(os.listdir(cwd)), files)  # no record, no program file


def module_copy(into):
    """What the evaluator copies for a warm interpreter (sources only), from python/."""
    import shutil

    python = os.path.dirname(os.path.abspath(z.__file__))
    for name in ("trex_eval_runner.py", "trex_eval_zygote.py", "trex_eval_warmup.py", "trex_eval_pyc.py",
                 "trex_modeling", "gurobipy", "coptpy", "trex_pulp"):
        source = os.path.join(python, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(into, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, into)


def pycs(folder):
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".pyc"):
                with open(os.path.join(root, name), "rb") as f:
                    out[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return out


def code_of(pyc):
    import marshal

    return marshal.loads(pyc[16:])


def same_code(a, b):
    """The pycs' code objects are equal but for the file names compile put in them (which
    the import system replaces by the module's own path when it loads a pyc)."""
    return _strip_names(code_of(a)) == _strip_names(code_of(b))


def _strip_names(code):
    consts = tuple(_strip_names(c) if hasattr(c, "co_code") else c for c in code.co_consts)
    return code.replace(co_filename="", co_consts=consts)


class PycCache(unittest.TestCase):
    """compile_in_place with the per-user cache of compiled modules: a second run copies the
    first run's pycs instead of compiling; a damaged or foreign entry is never used; an untrusted
    cache folder, or one reached through a link or an untrusted folder above it, is not used at
    all; what is read, written and pruned is in the folder that was opened and checked, whatever
    its path names later."""

    def setUp(self):
        import tempfile

        self.tmp = tempfile.mkdtemp()
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home, 0o700)
        self.path = os.path.join(self.home, ".cache", "trex", "pyc")
        self.fds = []

    def tearDown(self):
        import shutil

        for fd in self.fds:
            os.close(fd)
        shutil.rmtree(self.tmp)

    def open_cache(self):
        fd = pyc.pyc_cache_folder(self.home)
        if fd is not None:
            self.fds.append(fd)
        return fd

    def assertNotUsed(self, why):
        fds = len(os.listdir("/proc/self/fd"))
        self.assertIsNone(pyc.pyc_cache_folder(self.home), why)
        self.assertEqual(len(os.listdir("/proc/self/fd")), fds, why)  # nothing left open

    def assertOpensTheCache(self):
        fd = self.open_cache()
        self.assertIsNotNone(fd)
        self.assertTrue(os.path.samestat(os.fstat(fd), os.stat(self.path)))
        return fd

    def copy(self, name):
        folder = os.path.join(self.tmp, name)
        os.mkdir(folder)
        module_copy(folder)
        return folder

    def test_a_second_run_uses_the_entries_and_its_modules_import_from_their_own_path(self):
        cache = self.assertOpensTheCache()
        plain, first, second = self.copy("plain"), self.copy("first"), self.copy("second")
        pyc.compile_in_place(plain)
        pyc.compile_in_place(first, cache)
        self.assertEqual(len(os.listdir(self.path)), len(pycs(plain)))  # one entry per module
        pyc.compile_in_place(second, cache)
        p, a, b = pycs(plain), pycs(first), pycs(second)
        self.assertEqual(sorted(p), sorted(b))
        self.assertEqual(a, b)  # copied from the cache, byte for byte
        for name in p:
            self.assertTrue(same_code(p[name], b[name]), name)
        # Imported from the second copy, a module's code names the second copy's file (the import
        # system fixes the file name compile put in the pyc), as a compiled copy's does.
        import subprocess
        import sys

        check = ("import sys; sys.path.insert(0, %r); import trex_modeling.model as m; "
                 "print(m.ModelCore.__init__.__code__.co_filename)" % second)
        out = subprocess.run([sys.executable, "-I", "-B", "-c", check], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), os.path.join(second, "trex_modeling", "model.py"))

    def test_a_damaged_or_foreign_entry_is_compiled_instead(self):
        cache = self.open_cache()
        plain, first = self.copy("plain"), self.copy("first")
        pyc.compile_in_place(plain)
        pyc.compile_in_place(first, cache)
        entries = sorted(os.listdir(self.path))
        # One entry's body damaged, another's trailer cut, a third replaced by a pyc whose
        # header names another source (with a correct digest).
        digest = pyc.digest_constructor()

        def rewrite(name, change):
            path = os.path.join(self.path, name)
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(change(data))

        rewrite(entries[0], lambda d: d[:20] + bytes([d[20] ^ 0xFF]) + d[21:])
        rewrite(entries[1], lambda d: d[:-1])
        rewrite(entries[2], lambda d: (lambda data: data + digest(data).digest())(d[:8] + b"\0" * 8 + d[16:-32]))
        third = self.copy("third")
        pyc.compile_in_place(third, cache)
        p, c = pycs(plain), pycs(third)
        self.assertEqual(sorted(p), sorted(c))
        for name in p:
            self.assertTrue(same_code(p[name], c[name]), name)
            self.assertEqual(p[name][:16], c[name][:16], name)  # magic, flags, the source's hash

    def test_an_untrusted_cache_folder_is_not_used(self):
        self.assertOpensTheCache()
        cache = self.path
        os.chmod(cache, 0o770)  # another user of the group could write entries
        self.assertNotUsed("pyc group-writable")
        os.chmod(cache, 0o700)
        os.chmod(os.path.dirname(cache), 0o757)
        self.assertNotUsed("trex other-writable")
        os.chmod(os.path.dirname(cache), 0o700)
        self.assertOpensTheCache()
        os.rmdir(cache)
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.mkdir(elsewhere, 0o700)
        os.symlink(elsewhere, cache)  # a link: it could point anywhere
        self.assertNotUsed("pyc a link")
        os.unlink(cache)
        if os.geteuid() == 0:
            os.mkdir(cache, 0o700)
            os.chown(cache, 65534, 65534)  # owned by someone else
            self.assertNotUsed("pyc someone else's")

    def test_a_cache_below_a_link_or_an_open_folder_is_not_used(self):
        # Reviewer 1's case: a private home whose .cache is a link to a folder anyone may write
        # to; whoever can write there could swap trex after a check of the path.
        dot_cache = os.path.join(self.home, ".cache")
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        os.symlink(shared, dot_cache)
        self.assertNotUsed(".cache a link to an open folder")
        os.chmod(shared, 0o700)
        self.assertNotUsed(".cache a link to a private folder")  # a link still: it may be retargeted
        self.assertEqual(os.listdir(shared), [])  # nothing was made through the link
        os.unlink(dot_cache)
        os.mkdir(dot_cache, 0o700)
        for mode, why in ((0o770, ".cache group-writable"), (0o707, ".cache other-writable"),
                          (0o1777, ".cache sticky but open to all")):
            os.chmod(dot_cache, mode)
            if mode & 0o1000:
                # Sticky and this user's: others may add names but not replace trex.
                self.assertOpensTheCache()
                continue
            self.assertNotUsed(why)
        os.chmod(dot_cache, 0o700)
        os.chmod(self.home, 0o770)
        self.assertNotUsed("home group-writable")
        os.chmod(self.home, 0o700)
        self.assertOpensTheCache()

    def test_the_opened_folder_is_used_whatever_its_path_names_later(self):
        # A swap after the check cannot be raced here; what it would change is the path, so
        # move the checked folder away after the open and put another at its path: every read,
        # write and removal must be in the opened one.
        cache = self.assertOpensTheCache()
        moved = os.path.join(self.home, ".cache", "trex", "moved")
        os.rename(self.path, moved)
        os.mkdir(self.path, 0o700)
        for i in range(pyc.PYC_CACHE_ENTRIES + 1):
            with open(os.path.join(moved, "old%03d" % i), "wb") as f:
                f.write(b"x")
            os.utime(os.path.join(moved, "old%03d" % i), (1000 + i, 1000 + i))
        with open(os.path.join(self.path, "planted"), "wb") as f:
            f.write(b"x")
        os.utime(os.path.join(self.path, "planted"), (1000, 1000))
        first = self.copy("first")
        pyc.compile_in_place(first, cache)  # writes entries, then prunes
        self.assertEqual(os.listdir(self.path), ["planted"])  # nothing written or pruned at the path
        names = os.listdir(moved)
        self.assertEqual(len(names), pyc.PYC_CACHE_ENTRIES)
        self.assertEqual(len([n for n in names if not n.startswith("old")]), len(pycs(first)))
        # And a second run reads them from there: copied byte for byte.
        second = self.copy("second")
        os.rename(moved, os.path.join(self.tmp, "away"))
        pyc.compile_in_place(second, cache)
        self.assertEqual(pycs(first), pycs(second))
        self.assertEqual(os.listdir(self.path), ["planted"])

    def test_without_a_blake2_module_the_files_are_compiled_without_a_cache(self):
        # Reviewer 5's case (then for SHA-256, which Python 3.12 moved from _sha256 to _sha2):
        # an interpreter without the digest's module (its import blocked here, as an import of
        # a missing module fails) compiles as without a cache, writes no entry, and raises
        # nothing that would stop the zygote.
        from unittest import mock

        cache = self.open_cache()
        plain, first = self.copy("plain"), self.copy("first")
        pyc.compile_in_place(plain)
        with mock.patch.dict(sys.modules, {"_blake2": None}):
            self.assertIsNone(pyc.digest_constructor())
            pyc.compile_in_place(first, cache)
        self.assertEqual(os.listdir(self.path), [])  # no entry
        self.assertCompiledAsWithoutACache(plain, first, "no blake2")

    def assertCompiledAsWithoutACache(self, plain, folder, why):
        p, c = pycs(plain), pycs(folder)
        self.assertEqual(sorted(p), sorted(c), why)
        for name in p:
            self.assertTrue(same_code(p[name], c[name]), (why, name))
            self.assertEqual(p[name][:16], c[name][:16], (why, name))  # magic, flags, the source's hash

    def test_a_failure_on_the_cache_path_means_no_cache(self):
        # Whatever raises on the cache's path (here each of its steps in turn) is a run
        # without that step's entry, never an exception out of compile_in_place.
        from unittest import mock

        plain = self.copy("plain")
        pyc.compile_in_place(plain)
        for step in ("digest_constructor", "cached_pyc", "store_pyc", "prune_pyc_cache"):
            cache = self.open_cache()
            folder = self.copy("with_" + step)
            with mock.patch.object(pyc, step, side_effect=RuntimeError(step)):
                pyc.compile_in_place(folder, cache)
            self.assertCompiledAsWithoutACache(plain, folder, step)

    def test_an_entry_that_is_not_a_file_is_compiled_instead(self):
        # Reviewer 5's case: a FIFO as an entry blocked the open until a writer came, and the
        # interpreter's start with it. Each entry replaced by a FIFO (and one by a folder): the
        # run compiles them, without waiting. The alarm (a BaseException, which no "no cache"
        # handler catches) ends the test if an open blocks.
        import signal

        class Blocked(BaseException):
            pass

        def blocked(*_):
            raise Blocked()

        cache = self.open_cache()
        plain, first = self.copy("plain"), self.copy("first")
        pyc.compile_in_place(plain)
        pyc.compile_in_place(first, cache)
        entries = sorted(os.listdir(self.path))
        for name in entries[1:]:
            os.unlink(os.path.join(self.path, name))
            os.mkfifo(os.path.join(self.path, name), 0o600)
        os.unlink(os.path.join(self.path, entries[0]))
        os.mkdir(os.path.join(self.path, entries[0]), 0o700)
        second = self.copy("second")
        old = signal.signal(signal.SIGALRM, blocked)
        signal.alarm(60)  # a hang guard only: every open returns at once
        try:
            pyc.compile_in_place(second, cache)
        except Blocked:
            self.fail("an open of a FIFO entry blocked")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        self.assertCompiledAsWithoutACache(plain, second, "FIFO entries")

    def test_the_setting_turns_the_cache_off_or_names_its_folder(self):
        # TREX_PYC_CACHE (argv[3] from warm_pool.cc): "0" none; a path that folder, made when
        # missing, used only when it is this user's and writable by no one else.
        self.assertIsNone(pyc.open_pyc_cache("0"))
        folder = os.path.join(self.tmp, "chosen")
        fd = pyc.open_pyc_cache(folder)
        self.assertIsNotNone(fd)
        self.fds.append(fd)
        self.assertTrue(os.path.samestat(os.fstat(fd), os.stat(folder)))
        first = self.copy("first")
        pyc.compile_in_place(first, fd)
        self.assertEqual(len(os.listdir(folder)), len(pycs(first)))  # the entries went there
        os.chmod(folder, 0o757)
        self.assertIsNone(pyc.open_pyc_cache(folder), "other-writable")
        os.chmod(folder, 0o700)
        not_a_folder = os.path.join(self.tmp, "file")
        with open(not_a_folder, "wb"):
            pass
        self.assertIsNone(pyc.open_pyc_cache(not_a_folder), "a file")

    def test_the_cache_keeps_the_entries_written_last(self):
        cache = self.open_cache()
        for i in range(pyc.PYC_CACHE_ENTRIES + 5):
            path = os.path.join(self.path, "old%03d" % i)
            with open(path, "wb") as f:
                f.write(b"x")
            os.utime(path, (1000 + i, 1000 + i))
        pyc.compile_in_place(self.copy("first"), cache)  # writes entries, then prunes
        names = os.listdir(self.path)
        self.assertEqual(len(names), pyc.PYC_CACHE_ENTRIES)
        self.assertEqual(len([n for n in names if not n.startswith("old")]), len(pycs(os.path.join(self.tmp, "first"))))
        self.assertNotIn("old000", names)

    def test_the_script_runs_from_the_pyc_written_for_its_source_and_is_compiled_otherwise(self):
        # compiled_code (the bootstrap's, warm_pool.cc): the pyc compile_in_place wrote, under the
        # script's own path even where it came from the cache (compiled at another path); the
        # source compiled where the pyc is missing or was written for other bytes.
        cache = self.assertOpensTheCache()
        pyc.compile_in_place(self.copy("first"), cache)
        folder = self.copy("second")
        pyc.compile_in_place(folder, cache)
        script = os.path.join(folder, "trex_eval_zygote.py")
        with open(script, "rb") as f:
            source = f.read()
        fresh = compile(source, script, "exec", dont_inherit=True)
        code = pyc.compiled_code(script)
        self.assertEqual(code, fresh)
        self.assertEqual(code.co_filename, script)
        compiled = sys.modules["_frozen_importlib_external"].cache_from_source(script)
        with open(script, "ab") as f:
            f.write(b"\nCHANGED_AFTER_THE_COMPILE = 1\n")  # the pyc's source hash no longer matches
        self.assertIn("CHANGED_AFTER_THE_COMPILE", pyc.compiled_code(script).co_names)
        os.unlink(compiled)
        self.assertIn("CHANGED_AFTER_THE_COMPILE", pyc.compiled_code(script).co_names)
        with open(script, "ab") as f:
            f.write(b"def (\n")
        with self.assertRaises(SyntaxError):
            pyc.compiled_code(script)

    def test_a_copy_without_the_compile_module_says_so_on_the_control_socket(self):
        # What an evaluator built before trex_eval_pyc.py copies of a newer python/: the script
        # says why it cannot start, as the bootstrap does for a refused workspace, and exits 125.
        import subprocess

        folder = self.copy("older")
        os.unlink(os.path.join(folder, "trex_eval_pyc.py"))
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with here, there:
            run = subprocess.run([sys.executable, "-I", "-B", os.path.join(folder, "trex_eval_zygote.py"), "lib.so",
                                  str(there.fileno()), "0"], pass_fds=(there.fileno(),), capture_output=True,
                                 timeout=60)
            self.assertEqual(run.returncode, 125, run.stderr)
            message = json.loads(here.recv(1 << 16))
        self.assertFalse(message["ready"])
        self.assertIn("no trex_eval_pyc.py", message["error"])
        self.assertEqual(pycs(folder), {})  # nothing of it compiled or imported

    def test_the_copy_is_compiled_once_per_process(self):
        folder = self.copy("once")
        pyc.compile_module_copy(folder, "0")
        first = pycs(folder)
        self.assertTrue(first)
        for name in first:
            os.unlink(os.path.join(folder, name))
        pyc.compile_module_copy(folder, "0")  # the bootstrap did it: the script's call does nothing
        self.assertEqual(pycs(folder), {})


if __name__ == "__main__":
    unittest.main()
