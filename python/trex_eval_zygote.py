"""A warm interpreter for `trex eval` (issue 19): one per worker, started by the evaluator
(src/trex/oreval/warm_pool.cc) with the runner and the modelling modules already imported. It
forks one child per program; the child puts every sandbox layer on itself before anything of
the program runs, then runs the program as the runner does in a fresh interpreter. Before the
first fork it runs the modelling code once on a model of its own (trex_eval_warmup.py), so that
the children inherit that code warm; a child ends without tearing down the shared modules
(finish()).

Usage: python3 -I -B trex_eval_zygote.py LIBRARY CONTROL_FD [PYC_CACHE [COPY_AHEAD [FORK_EARLY [WORKSPACE WORKSPACE_FD]]]]

LIBRARY is trex's libtrex_sandbox_enter.so (the sandbox's child side, the same code that the
evaluator's own forked child runs before it executes a fresh interpreter). CONTROL_FD is a
SOCK_SEQPACKET socket to the evaluator. PYC_CACHE is $TREX_PYC_CACHE of the evaluator
(trex_eval_pyc.open_pyc_cache): "" or absent the per-user cache, "0" none, else the cache's folder.
COPY_AHEAD is $TREX_COPY_AHEAD of the evaluator: "0" turns the copy ahead off (WaitingChild,
survey_in_c, PagesChildrenWrite), anything else or absent leaves it on. FORK_EARLY "1" (warm_pool.cc: where
the evaluator leaves a CPU idle beside each worker) makes the library's loop fork each next child
while the current program runs instead of after its status (fork_early_wanted); absent or
anything else, after. WORKSPACE, a folder, and WORKSPACE_FD, the descriptor of a detached tmpfs
mount (src/trex/oreval/workspace.h): the interpreter attaches that mount at that folder in a
mount namespace of its own before its first fork (attach_workspace), and the evaluator then makes
each program's folder there; "" or absent: none. Where the evaluator put this module copy in the
workspace, its bootstrap (warm_pool.cc's kBootstrap, `python3 -c`) attaches it first, compiles
the copy in place (trex_eval_pyc.py), runs this script from there, from its pyc, and passes
WORKSPACE_FD as "attached". Each exchange on it is one JSON message:

  zygote -> evaluator  {"ready": true, "isolation": "...", "missing": N, "shared_netns": B,
                        "workspace": W}
                       once, at start (B: its children share the network namespace it made;
                       W: WORKSPACE is attached, the children's folders may be made there)
  evaluator -> zygote  {"workdir", "read_only", "argv", "env", "limits", "allow_weak"}
                       with the child's stdout, stderr and channel descriptors (SCM_RIGHTS)
  zygote -> evaluator  {"pid": N}                 the child runs; its group is its pid
  evaluator -> zygote  {"wait": SECONDS}          its output closed, or it was killed
  zygote -> evaluator  {"status": S, "timed_out": B}   raw wait status, after the reap

The child is reaped only after "wait", so until the answer the evaluator may kill its group
knowing the pid is still the child's. The zygote exits when the evaluator closes the socket.
Each child is forked ahead of its request (WaitingChild) and waits for it on a socket of its
own; nothing of the program runs before the request, and then only after every layer.
"""
import _thread
import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if not sys.path or sys.path[0] != _HERE:  # the bootstrap (warm_pool.cc) put it first already
    sys.path.insert(0, _HERE)

if __name__ == "__main__":
    # The module copy compiled in place (trex_eval_pyc.py) before anything of it is imported;
    # already done where the bootstrap ran this script from its pyc.
    try:
        import trex_eval_pyc
    except ImportError:
        # An evaluator built before trex_eval_pyc.py existed (session 28) copies no such file
        # (a python/ folder newer than the trex binary, e.g. an A/B's TREX_PYTHON_DIR): said on
        # the control socket, where await_ready puts it in every program's error, instead of a
        # bare "it exited with status 1".
        _line = "its module copy has no trex_eval_pyc.py: this python/ needs a trex built from session 28 on"
        try:
            os.write(int(sys.argv[2]), json.dumps({"ready": False, "error": _line}).encode())
        except (IndexError, ValueError, OSError):
            os.write(2, ("trex warm interpreter: " + _line + "\n").encode())
        os._exit(125)
    trex_eval_pyc.compile_module_copy(_HERE, sys.argv[3] if len(sys.argv) > 3 else "")

# What every program's runner imports anyway, imported once here. Nothing else is: a program's
# own imports (numpy, pulp, ...) run in its child as they would in a fresh interpreter.
import trex_eval_runner  # noqa: E402
import trex_eval_warmup  # noqa: E402
import trex_modeling  # noqa: E402,F401
import gurobipy  # noqa: E402,F401
import coptpy  # noqa: E402,F401

EXIT_SANDBOX = 126  # as the evaluator's own child exits when a layer cannot be applied


def send(ctl, message):
    ctl.send(json.dumps(message).encode())


# The three messages of every program are written and read here without the json module (same
# text on the wire): the zygote's first use of json after each fork touches some forty pages of
# the json modules' objects, each then copied because the waiting child still shares it, about
# 100 page faults and 0.4 ms of CPU per program in all.

def send_pid(ctl, pid):
    ctl.send(b'{"pid": %d}' % pid)


def send_status(ctl, status, timed_out):
    ctl.send(b'{"status": %d, "timed_out": %s}' % (status, b"true" if timed_out else b"false"))


def wait_seconds(message):
    """SECONDS of the evaluator's {"wait": SECONDS} (nlohmann's dump: no spaces, a finite
    number); any other shape is read by the json module."""
    if message.startswith(b'{"wait":') and message.endswith(b"}"):
        try:
            return float(message[8:-1])
        except ValueError:
            pass
    return float(json.loads(message)["wait"])


# The largest request a child takes: the C loop's buffer (zygote_serve.cc), and what serve() reads.
REQUEST_LIMIT = 1 << 20


def receive_request(sock):
    """A request and its descriptors (socket.recv_fds), read into a buffer of the message's own
    size, peeked first: recv_fds(sock, REQUEST_LIMIT, 3) made every child map a 1 MB buffer (a
    fresh mmap, above malloc's threshold), fault in its first page and unmap it again, with its
    TLB flush (perf, session 24: about 0.2 ms of each child's CPU). A larger message is cut at
    REQUEST_LIMIT as before (its json then fails: nothing runs); at the end of the stream the
    message is empty."""
    size = sock.recv_into(bytearray(1), 1, socket.MSG_PEEK | socket.MSG_TRUNC)
    return socket.recv_fds(sock, max(1, min(size, REQUEST_LIMIT)), 3)


def sandbox_arguments(request, fds, prepared):
    """trex_sandbox_enter's arguments for `request` (sandbox_enter.cc's order)."""
    limits = request["limits"]
    paths = [p.encode() for p in request["read_only"]]
    array = (ctypes.c_char_p * max(1, len(paths)))(*paths)
    return (request["workdir"].encode(), array, len(paths), int(limits["cpu_s"]),
            ctypes.c_uint64(int(limits["memory_bytes"])), ctypes.c_uint64(int(limits["file_bytes"])),
            int(limits["open_files"]), fds[0], fds[1], fds[2], 1 if request["allow_weak"] else 0, 1 if prepared else 0)


def enter(lib, request, fds, prepared=False):
    """In the child: every layer, or exit 126 (the library writes why to fd 2). `prepared`: the
    child already made its session and namespaces (trex_sandbox_prepare)."""
    lib.trex_sandbox_enter(*sandbox_arguments(request, fds, prepared))


def declare(lib):
    """The library's C signatures (sandbox_enter.cc)."""
    lib.trex_sandbox_probe.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.trex_sandbox_prepare.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.trex_sandbox_share_netns.argtypes = []
    lib.trex_sandbox_enter.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                       ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                       ctypes.c_int, ctypes.c_int, ctypes.c_int]


def run_child(lib, ctl, request, fds, prepared=False):
    """Never returns: the child ends in finish(), with the runner's status."""
    try:
        ctl.detach()  # its number is closed by the sandbox; the object must not close it again later
        enter(lib, request, fds, prepared)
    except BaseException:
        os._exit(EXIT_SANDBOX)
    # The environment and arguments a fresh interpreter would have been given.
    set_environment(request["env"])
    sys.argv = list(request["argv"][3:])  # [runner, program], after "python3 -I -B"
    try:
        status = trex_eval_runner.main()
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()  # as the interpreter reports an exception that ends it
        status = 1
    finish(status)


def set_environment(pairs):
    """Makes os.environ (and the C environment under it) exactly `pairs` ("NAME=VALUE"), in
    their order, as a fresh interpreter given them would have it. The zygote's own environment
    is the fresh path's (src/trex/oreval/warm_pool.cc) and a request's differs from it in a
    name or two (HOME, the channel), so when the zygote's names are the start of the wanted
    ones, in the same order, only what differs is set; otherwise everything is cleared and set
    in order. (Clearing and setting all of them cost every child some 60 page faults.)"""
    wanted = [pair.partition("=") for pair in pairs]
    environ = os.environ
    current = list(environ)
    if current == [name for name, _, _ in wanted[:len(current)]]:
        for name, _, value in wanted:
            if environ.get(name) != value:
                environ[name] = value
        return
    environ.clear()
    for name, _, value in wanted:
        environ[name] = value


def warm_request_path(rounds=10):
    """Runs, in the zygote, the request handling every child runs before the program, all but
    the call into the sandbox library: the request and its descriptors received (on a socket
    pair of its own, descriptors of /dev/null), read (json.loads), the library's arguments made,
    the environment set (set_environment, to the zygote's own, so nothing changes). Code first
    run in each child ran cold there, and its first calls wrote the warm-up counters of code
    objects whose pages every sibling shares."""
    sample = json.dumps({"workdir": "/", "read_only": ["/usr"], "argv": ["python3", "-I", "-B", "r.py", "p.py"],
                         "env": ["PATH=/usr/bin:/bin"], "limits": {"cpu_s": 1, "memory_bytes": 1, "file_bytes": 1,
                                                                   "open_files": 1}, "allow_weak": False}).encode()
    own = ["%s=%s" % item for item in os.environ.items()]
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for _ in range(rounds):
            socket.send_fds(here, [sample], [null, null, null])
            message, fds, _, _ = receive_request(there)
            for fd in fds:
                os.close(fd)
            sandbox_arguments(json.loads(message), fds, True)
            set_environment(own + ["TREX_WARM_UP=1"])  # a name added: what a child's request does
            set_environment(own)  # and back (cleared and set in order)
    finally:
        os.close(null)
        here.close()
        there.close()


def finish(status):
    """Ends the child as a fresh interpreter's shutdown ends the program, in its order: the
    program's non-daemon threads joined, its atexit handlers run, its unreachable objects
    finalised (a file it left open in a function's globals is flushed and closed), the standard
    streams flushed (a failure gives status 120, as Python's does). What is not done is the
    interpreter's own teardown: every module the child shares with its siblings deallocated,
    which took 4-5 ms of CPU per program (copy-on-write faults on the shared pages) and changes
    nothing a verdict reads. Left alone, as no fresh interpreter would: objects a program hung
    on another module (a file stored as an attribute of `json`) are not finalised."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            status = 120
    # The output ends here when no thread of the program's is left to write more: the kernel
    # closes an exiting process's files only after its address space is torn down (about 0.8 ms
    # here), and the evaluator reads the model file ahead between the end of the output and the
    # status (src/trex/oreval/execute.cc ModelReadAhead), so that teardown overlaps its work.
    # With a thread left (a daemon, which may still print) the streams stay open to the exit, as
    # before. A thread started outside Python (ctypes) is not counted; it could still rewrite the
    # model file, which the evaluator reads again after the status. An interpreter without
    # _thread._count (private) keeps them open: this function must reach os._exit whatever fails.
    try:
        alone = _thread._count() == 0
    except BaseException:
        alone = False
    if alone:
        for fd in (1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
    os._exit(status & 0xFF)


class WaitingChild:
    """The next program's child, forked ahead of its request: the fork (copying the page
    tables, the first copy-on-write faults) then overlaps the evaluator's work on the previous
    program instead of lying on every program's path. Until its request comes the child only
    waits on a socket of its own; with the request it does what a child forked on the request
    does (run_child: every sandbox layer before anything of the program). It is forked from the
    same interpreter state, since the zygote changes nothing between programs.

    First it makes its own copies of the zygote's pages that a program's child writes to
    (copy_ahead), which the program would otherwise copy one page fault at a time: that cost,
    smaller, then falls while the evaluator works on the previous program. While it waits it also makes the layers that do not depend on the request
    (trex_sandbox_prepare: a session of its own, and a network namespace of its own unless the
    zygote made one for all its children (main()), made by this child for this one program, as
    a child forked on the request makes them), so that their cost is off the program's path
    too. If that fails,
    nothing of the program runs: the child writes why to the program's stderr, as the
    library does for any layer that fails, and exits 126."""

    def __init__(self, lib, ctl, pages=()):
        self.lib, self.ctl = lib, ctl
        self.pid, self.sock = None, None
        self.pages, self.madvise = (), None
        self.use_pages(pages)

    def use_pages(self, pages):
        """The runs of the zygote's pages that the children forked from now on copy ahead
        (PagesChildrenWrite's answer); none where this kernel cannot copy ahead (probed once,
        here, in the zygote: populate_write_works)."""
        if pages and self.madvise is None:
            madvise = libc_madvise()
            self.madvise = madvise if populate_write_works(madvise) else False
        self.pages = (pages or ()) if self.madvise else ()

    def fork(self):
        zygote_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            zygote_end.close()
            self.wait_for_request(child_end)
        child_end.close()
        self.pid, self.sock = pid, zygote_end

    def wait_for_request(self, child_end):
        """The child's side, on `child_end` (its socket to the zygote): the copy ahead, the
        layers that do not depend on the request, then the request run (run_child). Never
        returns."""
        try:
            copy_ahead(self.madvise, self.pages)
        except BaseException:
            pass  # only a cost: the pages are copied on their first write instead
        failed = ctypes.create_string_buffer(256)
        try:
            prepared = self.lib.trex_sandbox_prepare(failed, len(failed)) == 0
            message, fds, _, _ = receive_request(child_end)
        except BaseException:
            os._exit(EXIT_SANDBOX)
        if not message or len(fds) != 3:
            os._exit(0)  # the zygote stopped, or sent nothing usable: nothing runs
        if not prepared:
            try:
                os.write(fds[1], b"trex sandbox: " + failed.value + b"\n")
            finally:
                os._exit(EXIT_SANDBOX)
        child_end.detach()  # its number is closed by the sandbox
        try:
            request = json.loads(message)
        except BaseException:
            os._exit(EXIT_SANDBOX)  # nothing usable: nothing runs
        run_child(self.lib, self.ctl, request, fds, prepared=True)

    def hand(self, message, fds):
        """Gives the request and the child's descriptors to the waiting child; its pid, or
        None when there is none (it died, or could not be reached; it is reaped here)."""
        pid, sock = self.pid, self.sock
        self.pid, self.sock = None, None
        if pid is None:
            return None
        try:
            socket.send_fds(sock, [message], fds)
            return pid
        except OSError:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None
        finally:
            sock.close()

    def stop(self):
        if self.pid is not None:
            self.sock.close()  # it reads the end and exits
            os.waitpid(self.pid, 0)
            self.pid, self.sock = None, None


MADV_POPULATE_WRITE = 23  # Linux 5.14; older kernels answer EINVAL (populate_write_works)
MAPPING_LIMIT = 1 << 30  # private_pages() reads no larger mapping's pagemap
PAGEMAP_CHUNK = 4096  # pagemap entries read at a time (32 KB)


def private_pages():
    """The pages a child of this interpreter copies on its first write to them: runs (address,
    length) of the present anonymous pages of its private writable mappings (the malloc heap,
    pymalloc's arenas, the static data of python3 and its libraries, the stack), read from
    /proc/self/maps and /proc/self/pagemap. Pages of a file still shared with the page cache
    are left out (a child that only reads them copies nothing). Empty when either file cannot
    be read: then no child copies anything ahead, as before."""
    import struct

    present, file_or_shared = 1 << 63, 1 << 61
    runs = []
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
        fd = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        for line in lines:
            fields = line.split()
            perms = fields[1]
            if perms[1] != "w" or perms[3] != "p":
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if hi - lo > MAPPING_LIMIT:
                continue  # a reservation (no interpreter heap is this large): not read
            start, address = None, lo
            while address < hi:
                wanted = min(hi - address, PAGEMAP_CHUNK << 12) >> 12
                try:
                    data = os.pread(fd, wanted * 8, (address >> 12) * 8)
                except OSError:
                    data = b""
                for entry in struct.unpack("%dQ" % (len(data) // 8), data):
                    if entry & present and not entry & file_or_shared:
                        if start is None:
                            start = address
                    elif start is not None:
                        runs.append((start, address - start))
                        start = None
                    address += 4096
                if len(data) < wanted * 8:
                    break  # unreadable from here on: the rest of the mapping is left out
            if start is not None:
                runs.append((start, address - start))
    finally:
        os.close(fd)
    return runs


class PagesChildrenWrite:
    """Where the C loop cannot survey real children (survey_in_c: the Python loop, a library
    without trex_zygote_survey): of `pages` (private_pages()), the runs that a program's child
    writes to, as far as the warm-ups show: a child forked here runs what every program's child runs around its program
    (the request path, the runner on the warm-up's small program) and the warm-up's model once,
    then reads from /proc/self/pagemap which of the pages it now maps exclusively (its own
    copies: the ones it wrote) and sends their addresses back on a pipe. Nothing of a program
    has run in this interpreter, and none runs in that child. A page the zygote writes in the
    meantime (its request loop) does not make the training child's original exclusive: a
    holder, forked by the zygote just before it, shares every page the training child does not
    write, and ends when the training child does (the EOF of a pipe only the training child
    holds open). The holder is the zygote's child, not the training child's, so that stop(),
    which kills the training child at the zygote's end, also kills and reaps the holder: forked
    by the training child it outlived it, an orphan for init or the evaluator's subreaper to
    reap (one in a `--limit 1` run of the pool bench, session 20). A page the zygote writes
    between the two forks (its fork's own bookkeeping) and again while the training child runs
    may be listed although no child writes it: a copy too many, not a wrong one (measured: no
    difference in a whole run, bench/results/oreval_pool_s21.md).

    It runs beside the zygote's first programs (40-60 ms here, mostly its own page faults): the
    zygote asks poll() between programs, and until the answer is in its children copy nothing
    ahead, as when it fails (poll() then stays None, whether the pipe, the fork, the child or
    the read failed: only a cost, never the zygote's end).

    Why not every page: a copy made ahead costs some 7 us a page on this project's machine
    (whose page faults go through its hypervisor: 14 us each), and a program's child writes to
    about 700 of the interpreter's 1,900 private pages (reference counts, pymalloc's pools):
    copying all of them cost as much CPU as the faults they saved. A program's child then
    takes about 250 faults instead of 700 (docs/eval.md)."""

    def __init__(self, pages):
        self.pid, self.holder, self.fd, self.chunks, self.runs = None, None, None, [], None
        self.done = not pages
        if self.done:
            return
        hold_r = hold_w = r = w = holder = None
        try:
            hold_r, hold_w = os.pipe()
            r, w = os.pipe()
            holder = os.fork()
            if holder == 0:
                try:
                    os.close(hold_w)
                    os.close(r)
                    os.close(w)
                    os.read(hold_r, 1)  # EOF: the training child has ended (or the zygote, before it forked one)
                finally:
                    os._exit(0)
            pid = os.fork()
        except OSError:  # no answer, no copies ahead: as before, never the zygote's end
            if holder:
                _kill_and_reap(holder)
            for fd in (hold_r, hold_w, r, w):
                if fd is not None:
                    os.close(fd)
            self.done = True
            return
        if pid == 0:
            status = 1
            try:
                os.close(r)
                os.close(hold_r)  # hold_w stays open here until this child ends
                _send_written(w, pages)
                status = 0
            finally:
                os._exit(status)
        for fd in (hold_r, hold_w, w):
            os.close(fd)
        os.set_blocking(r, False)
        self.pid, self.holder, self.fd = pid, holder, r

    def poll(self, block=False):
        """The runs once the training child has answered (reaped then); None before, or when it
        failed."""
        if self.done:
            return self.runs
        try:
            os.set_blocking(self.fd, block)
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    break
                self.chunks.append(chunk)
        except BlockingIOError:
            return None
        except OSError:  # an unexpected error: no answer (stop() ends and reaps the child)
            self.stop()
            return None
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        _kill_and_reap(self.holder)  # its work is done: not left to notice the EOF
        self.pid, self.holder, self.fd, self.done = None, None, None, True
        data = b"".join(self.chunks)
        if status == 0 and len(data) % 8 == 0:
            self.runs = _runs_of(data)
        return self.runs

    def stop(self):
        """Ends and reaps the training child and its holder if they are still running."""
        if self.pid is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            _kill_and_reap(self.pid)
            _kill_and_reap(self.holder)
            self.pid, self.holder, self.fd, self.done = None, None, None, True


def _kill_and_reap(pid):
    """SIGKILL to a child of this process, then its reap (it may have exited already)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def pages_children_write(pages):
    """PagesChildrenWrite's answer, waited for; None when `pages` is empty or it failed."""
    return PagesChildrenWrite(pages).poll(block=True)


def _send_written(fd, pages):
    """In the training child, while the holder (PagesChildrenWrite) shares every page this
    child has not written: the warm-ups' code once, then the addresses of the pages of `pages`
    it now maps exclusively (its own copies: the pages it wrote), to `fd`."""
    import struct

    present, exclusive = 1 << 63, 1 << 56
    warm_request_path(rounds=1)
    trex_eval_warmup.warm_up(rounds=1)
    trex_eval_warmup.warm_up_runner(rounds=1)
    gc.collect()  # as finish() does
    written = []
    pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
    for address, length in pages:
        data = os.pread(pagemap, (length >> 12) * 8, (address >> 12) * 8)
        for i, entry in enumerate(struct.unpack("%dQ" % (len(data) // 8), data)):
            if entry & present and entry & exclusive:
                written.append(address + (i << 12))
    os.close(pagemap)
    data = struct.pack("%dQ" % len(written), *written)
    while data:
        data = data[os.write(fd, data):]


def _runs_of(data):
    """Page addresses (packed, ascending) as runs (address, length)."""
    import struct

    runs = []
    for address in struct.unpack("%dQ" % (len(data) // 8), data):
        if runs and runs[-1][0] + runs[-1][1] == address:
            runs[-1][1] += 4096
        else:
            runs.append([address, 4096])
    return [tuple(run) for run in runs]


def copy_ahead(madvise, pages):
    """In a child: its copies of `pages` (PagesChildrenWrite's answer in the interpreter it was
    forked from) made now, with one madvise(MADV_POPULATE_WRITE) per run, instead of one page
    fault for each at the program's first write to it (a fault's trap costs more than the copy:
    about 14 against 7 us a page where page faults go through a hypervisor, measured).
    A run that fails (unmapped or made read-only since: ENOMEM, EINVAL) leaves its pages to be
    copied on their first write, as before; the next runs are still copied. Whether the kernel
    has MADV_POPULATE_WRITE at all was probed once in the zygote (populate_write_works)."""
    for address, length in pages:
        madvise(address, length, MADV_POPULATE_WRITE)


def populate_write_works(madvise):
    """Whether madvise(MADV_POPULATE_WRITE) works here (Linux 5.14 and later): tried on one
    private page of its own. Before 5.14 the kernel answers EINVAL, as it does for a run that
    cannot be written, so a later run's error cannot tell the two apart."""
    import mmap

    try:
        page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:
        return False
    try:
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        return madvise(address, 4096, MADV_POPULATE_WRITE) == 0
    except BaseException:
        return False
    finally:
        try:
            page.close()
        except BufferError:
            pass


def libc_madvise():
    """madvise of the C library, declared for copy_ahead (errno kept)."""
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


def kill_group(pid):
    """SIGKILL to the child's group; to the child alone when it has no group of its own yet
    (killed before its setsid), so that nothing it started outlives the wall clock."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for(pid, seconds):
    """Waits until the child exits or `seconds` pass (then kills its group), kills whatever is
    left in the group while the exited leader still holds the pid, then reaps it."""
    timed_out = False
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, seconds))
        if not ready:
            timed_out = True
            kill_group(pid)
            select.select([pidfd], [], [])
    finally:
        os.close(pidfd)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, status = os.waitpid(pid, 0)
    return status, timed_out


def main():
    # The evaluator starts this interpreter with LD_BIND_NOW (warm_pool.cc): every library's
    # symbols are bound here, once, not at a child's first call of each (which wrote the
    # library's pages of addresses, shared with every sibling until then). The dynamic loader
    # has read it; no child needs it.
    os.environ.pop("LD_BIND_NOW", None)
    lib = ctypes.CDLL(sys.argv[1])
    declare(lib)
    ctl = socket.socket(family=socket.AF_UNIX, type=socket.SOCK_SEQPACKET, fileno=int(sys.argv[2]))
    buf = ctypes.create_string_buffer(256)
    missing, shared_netns = probe(lib, buf)
    workspace = attach_workspace(lib, sys.argv)
    if fork_early_wanted(sys.argv):
        fork_early = getattr(lib, "trex_zygote_fork_early", None)
        if fork_early is not None:  # an older library: its loop forks after the status
            fork_early(1)
    trex_eval_warmup.warm_up()
    trex_eval_warmup.warm_up_runner()
    warm_request_path()
    # What is loaded now is shared by every child: frozen, the children's collections never walk
    # it, so they do not write to (and copy) its pages. Generations 0 and 1 only: the start-up's
    # garbage is young (a full collection found the same unreachable objects at ~5x the CPU,
    # 2.2 against 0.45 ms; it only untracks some old tuples as well, which the freeze makes moot).
    gc.collect(1)
    gc.freeze()
    # The heap's free pages (the start-up's compile and imports, the warm-up's models) back to
    # the kernel: about 2 of 9 MB of this interpreter's private memory, page-table entries
    # that every fork copied and every child's exit tore down again.
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)
    huge_text(lib)
    if copy_ahead_wanted(sys.argv):
        fork_file_pages(lib)
    # Found once, in the interpreter every child is forked from (its later messages change a
    # few pages): by the C loop from what the first programs' children write (survey_in_c), else
    # by a training child that runs beside the first programs.
    pages = private_pages() if copy_ahead_wanted(sys.argv) else ()
    training = PagesChildrenWrite(() if survey_in_c(lib, pages) else pages)
    try:
        return serve(lib, ctl, buf.value.decode(), missing, shared_netns, training, workspace=workspace)
    finally:
        training.stop()


def probe(lib, buf):
    """The sandbox probe's missing layers (its isolation in `buf`), and whether this interpreter
    moved into one network namespace for its children, made here, when seccomp keeps every
    program from creating anything in it (sandbox_child.h, docs/eval.md "Isolation"); else each
    child makes its own while it waits. With trex_sandbox_probe_in_shared_netns the move is
    made first and answers the probe's network-namespace question (no throwaway child forked
    to ask it); an older library probes, then moves."""
    both = getattr(lib, "trex_sandbox_probe_in_shared_netns", None)
    if both is None:
        missing = lib.trex_sandbox_probe(buf, len(buf))
        return missing, lib.trex_sandbox_share_netns() == 1
    both.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    both.restype = ctypes.c_int
    shared = ctypes.c_int(0)
    missing = both(buf, len(buf), ctypes.byref(shared))
    return missing, shared.value == 1


def attach_workspace(lib, argv):
    """The evaluator's workspace tmpfs (WORKSPACE_FD, argv[7]) attached at WORKSPACE (argv[6]) in
    a mount namespace of this interpreter's own (trex_sandbox_attach_workspace, src/trex/oreval/
    workspace.h), here, before the first fork, so that every child is forked into it. Whether it
    is; False (the evaluator then makes the programs' folders under $TMPDIR, as before) where
    none was given, the library has no such function or a step was refused. The descriptor is
    closed either way: no child inherits the mount's descriptor. WORKSPACE_FD "attached": the
    evaluator's bootstrap (warm_pool.cc) attached it already and ran this script from there."""
    if len(argv) <= 7 or not argv[6]:
        return False
    if argv[7] == "attached":
        return True
    try:
        fd = int(argv[7])
    except ValueError:
        return False
    try:
        attach = getattr(lib, "trex_sandbox_attach_workspace", None)
        if attach is None:
            return False
        attach.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
        attach.restype = ctypes.c_int
        failed = ctypes.create_string_buffer(256)
        return attach(fd, argv[6].encode(), failed, len(failed)) == 0
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def huge_text(lib):
    """python3's machine code onto 2 MB pages (trex_zygote_huge_text, src/trex/oreval/
    huge_text.cc), here, before the first fork, while this interpreter runs one thread: each
    child then maps it with one page-table entry instead of one per 4 kB page it executes.
    Returns how many 2 MB parts moved (0 where the library has no such function or the kernel
    no 2 MB pages); the code runs the same either way."""
    move = getattr(lib, "trex_zygote_huge_text", None)
    if move is None:
        return 0
    move.argtypes = []
    move.restype = ctypes.c_int
    return max(0, move())


def fork_file_pages(lib):
    """The interpreter's read-only file mappings (libc's and libm's code, python3's read-only data
    past its 2 MB parts, the extension modules) made such that fork copies their page-table
    entries (trex_zygote_fork_file_pages, src/trex/oreval/fork_file_pages.cc): here, once, after
    huge_text and before the first fork, while this interpreter runs one thread. A child then
    finds mapped every such page the interpreter has mapped instead of faulting it in again
    (about 40 of a program's child's page faults on the PVM machine, docs/eval.md). Returns how
    many mappings changed (0 where the library has no such function); raises where a mapping's
    protection could not be restored, so that this interpreter ends before it forks anything.
    Changes nothing while a second Python thread runs: ctypes lets go of the GIL for the call, and
    no thread may write to a mapping in the moment it is writable (the zygote runs one thread)."""
    prepare = getattr(lib, "trex_zygote_fork_file_pages", None)
    threads = sys.modules.get("threading")  # none started where it was never imported
    if prepare is None or (threads is not None and threads.active_count() != 1):
        return 0
    prepare.argtypes = []
    prepare.restype = ctypes.c_int
    done = prepare()
    if done < 0:
        raise RuntimeError("trex_zygote_fork_file_pages: a read-only mapping stayed writable")
    return done


def copy_ahead_wanted(argv):
    """COPY_AHEAD (argv[4], $TREX_COPY_AHEAD of the evaluator, docs/eval.md): "0" turns the copy
    ahead off (no survey, no training child, so no child copies anything ahead, and no
    fork_file_pages: the same trade of the fork's work for a child's page faults); absent or
    anything else leaves it on. Its gain was measured only where page faults trap through a
    hypervisor."""
    return len(argv) <= 4 or argv[4] != "0"


def fork_early_wanted(argv):
    """FORK_EARLY (argv[5], from warm_pool.cc): "1" asks the library's loop to fork the next
    program's child while the current program runs (trex_zygote_fork_early), which the evaluator
    asks where each worker has a CPU it leaves idle: less wall per program, somewhat more CPU
    (docs/eval.md). Absent or anything else: after the program's status, as before."""
    return len(argv) > 5 and argv[5] == "1"


def serve(lib, ctl, isolation, missing, shared_netns, training, loop=None, workspace=False):
    """The zygote's loop over the evaluator's requests (the module's docstring), until the
    evaluator closes the socket: the library's loop in C (serve_in_c) where `lib` has one
    (c_loop; `loop` names another, the tests), else this one in Python. `workspace`: whether
    attach_workspace attached the evaluator's tmpfs."""
    ready = {"ready": True, "isolation": isolation, "missing": missing, "shared_netns": shared_netns,
             "workspace": workspace}
    loop = loop or c_loop(lib)
    if loop is not None:
        status = serve_in_c(loop, lib, ctl, json.dumps(ready).encode(), training)
        if status is not None:
            return status
    waiting = WaitingChild(lib, ctl)
    waiting.fork()
    send(ctl, ready)
    while True:
        message, fds, _, _ = socket.recv_fds(ctl, REQUEST_LIMIT, 3)
        if not message:
            waiting.stop()
            return 0  # the evaluator is gone
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send(ctl, {"error": "expected 3 descriptors, got %d" % len(fds)})
            continue
        request = None  # read here only for a child forked on the request
        pid = waiting.hand(message, fds)  # the waiting child reads the request itself
        if pid is None:  # the waiting child is gone: fork one now, as before
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                run_child(lib, ctl, request, fds)
        for fd in fds:
            os.close(fd)
        send_pid(ctl, pid)
        message = ctl.recv(1 << 16)
        if not message:
            kill_group(pid)
            os.waitpid(pid, 0)
            return 0
        status, timed_out = wait_for(pid, wait_seconds(message))
        send_status(ctl, status, timed_out)
        # The next child runs under this frame: it must not find this program's request (its
        # working directory, environment, limits) among the frame's locals.
        del request, fds
        if not training.done:
            waiting.use_pages(training.poll())
        waiting.fork()  # the next child, while the evaluator reads this one's results


def c_loop(lib):
    """trex_zygote_serve of the sandbox library `lib` was loaded from (src/trex/oreval/
    zygote_serve.cc), declared to run holding the interpreter's lock (ctypes.PyDLL), as
    os.fork does; None where `lib` has none (a stand-in, an older library)."""
    name = getattr(lib, "_name", None)
    if not isinstance(name, str):
        return None
    try:
        loop = ctypes.PyDLL(name).trex_zygote_serve
    except (OSError, AttributeError):
        return None
    loop.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    loop.restype = ctypes.c_int
    loop.library = ctypes.CDLL(name)  # its other functions (copy_ahead_in_c)
    return loop


SERVE_GONE, SERVE_IN_CHILD, SERVE_TRAINING_READY, SERVE_FAILED, SERVE_BAD_WAIT = 0, 1, 2, -1, 3  # its Outcome


def serve_in_c(loop, lib, ctl, ready, training):
    """serve() with the loop in C (`loop`: c_loop's), so that no Python runs in the zygote
    between two forks: a Python loop touches objects on about 100 pages that each fork makes
    the zygote copy again (docs/eval.md "Warm interpreters"). The loop returns here in each
    child it forks ahead of a request, which then runs WaitingChild's side (never returns);
    in the zygote when the training child's answer can be read (read here, then the loop goes
    on: the next children copy its pages ahead) and when the evaluator is gone (0). None when
    the loop could not start (it forked nothing and sent nothing): serve() then runs its own."""
    waiting = WaitingChild(lib, ctl)
    child = ctypes.c_int(-1)
    while True:
        fd = getattr(training, "fd", None)
        fd = fd if fd is not None and not training.done else -1
        outcome = loop(ctl.fileno(), fd, ready, ctypes.byref(child))
        if outcome == SERVE_IN_CHILD:
            try:
                waiting.wait_for_request(socket.socket(fileno=child.value))
            finally:
                os._exit(EXIT_SANDBOX)  # never back into the zygote's loop
        if outcome == SERVE_FAILED and ready is not None:
            return None
        if outcome == SERVE_BAD_WAIT:  # the child is killed and reaped: the zygote exits, as serve()'s loop does
            raise ValueError("the evaluator's message after {\"pid\": N} is not {\"wait\": SECONDS}")
        ready = None  # sent with the first child forked
        if outcome == SERVE_TRAINING_READY:
            waiting.use_pages(training.poll())
            copying = copy_ahead_in_c(loop, waiting.pages)
            if copying is not None:
                waiting.pages = copying  # kept alive while the loop's children copy them
            continue
        return 0


class Iovec(ctypes.Structure):
    """One run of pages as the C loop reads a list of them (struct iovec: base, length)."""
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


# survey_in_c: the pages that 2 of the first 4 programs' children write. Session 22 (oreval_env_ab.py,
# 7 pairs each): copied ahead, 4 and 2 cost 1.07x the CPU of 4 and 3 (load 11-13); pinned (copied
# by the fork, a few us a page), 4 and 2 took 15 and 19 fewer page faults per program than 4 and 3,
# CPU 0.959 and 0.934 (6 of 7 lower both times, load 12-18); 2 and 2 no change.
SURVEY_CHILDREN, SURVEY_AT_LEAST = 4, 2


def survey_in_c(lib, pages, children=SURVEY_CHILDREN, at_least=SURVEY_AT_LEAST):
    """Asks the C loop of `lib` to list the pages the children copy ahead from what the first
    `children` programs' children write (trex_zygote_survey, src/trex/oreval/zygote_serve.cc):
    the zygote reads each one's /proc/PID/pagemap while it runs, and every later child gets its
    own copies of the pages of `pages` (private_pages()) that at least `at_least` of them wrote:
    at the fork, where the zygote can pin them (an io_uring's buffers), else copied ahead.
    The training child (PagesChildrenWrite) runs a child's path without the sandbox and its
    program: of the ~115 pages that 90% of real children write it listed 5, and 500 that they
    do not (docs/eval.md, session 21). True when the survey is set up (then no training child
    is wanted); False where `lib` has no such loop, the kernel cannot copy ahead or `pages` is
    empty."""
    if not pages or c_loop(lib) is None:
        return False
    register = getattr(lib, "trex_zygote_survey", None)
    if register is None or not populate_write_works(libc_madvise()):
        return False

    runs = (Iovec * len(pages))(*[Iovec(address, length) for address, length in pages])
    register.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    register.restype = ctypes.c_int
    return register(ctypes.addressof(runs), len(pages), children, at_least) == 0  # copied there


def copy_ahead_in_c(loop, pages):
    """Hands `pages` (use_pages's runs) to the C loop, whose children copy them first thing
    after their fork, before the interpreter's after-fork work reads any of them (a page read
    before its copy costs about three times as much to copy here); None, and the children copy
    them in Python as before, where the library has no trex_zygote_copy_ahead. Returns what the
    caller keeps: the runs as the loop reads them."""
    register = getattr(getattr(loop, "library", None), "trex_zygote_copy_ahead", None)
    if register is None or not pages:
        return None

    runs = (Iovec * len(pages))(*[Iovec(address, length) for address, length in pages])
    register.argtypes = [ctypes.c_void_p, ctypes.c_int]
    register.restype = None
    register(ctypes.addressof(runs), len(pages))
    return CopiedInC(runs)


class CopiedInC(tuple):
    """WaitingChild.pages once the C loop's children copy them (copy_ahead_in_c): empty, so
    that the child's Python side copies nothing again, holding the loop's vector alive."""

    def __new__(cls, runs):
        self = super().__new__(cls)
        self.runs = runs
        return self


if __name__ == "__main__":
    status = main()
    # The evaluator is gone and every child is reaped: tearing this interpreter's modules down
    # (3-5 ms) would only delay the evaluator, which waits for this exit before it removes the
    # module copy. Nothing is buffered but the standard streams.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(status)
