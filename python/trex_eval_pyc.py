"""The warm interpreter's compiled module copy (issue 19): the evaluator copies the module's
sources only (src/trex/oreval/module_copy.h) and the interpreter byte-compiles them in place
before it imports any (compile_in_place), keeping each compiled file in a per-user cache
(pyc_cache_folder) so that the next run copies it instead of compiling.

A module of its own, apart from trex_eval_zygote.py, so that the evaluator's bootstrap
(warm_pool.cc's kBootstrap) can compile the copy first and then run the zygote's script from
the pyc written for it (compiled_code) instead of compiling its 55 kB of source at every start.
Only the interpreter's built-in modules are imported here: nothing of it is left for the
children but what the zygote imports anyway.
"""
import os
import sys


PYC_CACHE_ENTRIES = 256  # a few dozen states of python/; the oldest written go first beyond this


def pyc_cache_folder(home=None):
    """The per-user cache of compiled modules (docs/eval.md "Warm interpreters"), as an open
    descriptor of its folder, or None when it cannot be trusted or made: ~/.cache/trex/pyc of
    the effective user (from the password database: this interpreter's HOME is its module
    copy). `home`: another home folder (the tests).

    Walked down from the home folder one name at a time (O_NOFOLLOW, each opened in its
    parent's descriptor) and checked on what was opened (fstat), so a name swapped after its
    check is never the one used: the home folder and .cache owned by this user or root and
    writable by no one else (unless sticky and this user's), trex and pyc real folders owned by
    this user that no one else may write to. Only this user can then put an entry there, and
    this user can already change python/ and trex themselves. Every later read, write, rename
    and removal goes through the returned descriptor (the caller closes it), never the path."""
    import pwd

    uid = os.geteuid()
    try:
        home = home or pwd.getpwuid(uid).pw_dir
    except KeyError:
        return None
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        # The home folder's own path is the password database's (it may pass through links an
        # administrator made); from it down, no name may be a link.
        fd = os.open(home, flags)
    except OSError:
        return None
    for name, leaf in ((".cache", False), ("trex", True), ("pyc", True)):
        if not _trusted_folder(fd, uid, leaf=False):
            os.close(fd)
            return None
        try:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(name, flags | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            return None  # refused, a link (ELOOP) or not a folder (ENOTDIR): no cache
        finally:
            os.close(fd)
        fd = child
        if leaf and not _trusted_folder(fd, uid, leaf=True):
            os.close(fd)
            return None
    return fd


def open_pyc_cache(setting):
    """The cache folder that TREX_PYC_CACHE names, as warm_pool.cc passes it (argv[3]), open as
    pyc_cache_folder() returns it: "" (unset) the per-user one, "0" none, else that folder
    (absolute; made if missing), used when it is this user's and writable by no one else. The
    tests run with "0": they leave the home folder as they found it."""
    if setting == "0":
        return None
    if setting == "":
        return pyc_cache_folder()
    uid = os.geteuid()
    try:
        try:
            os.mkdir(setting, 0o700)
        except FileExistsError:
            pass
        # The path is the user's own choice (it may pass through links); what was opened is
        # checked, and every later use goes through the descriptor.
        fd = os.open(setting, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    if not _trusted_folder(fd, uid, leaf=True):
        os.close(fd)
        return None
    return fd


def _trusted_folder(fd, uid, leaf):
    """Whether no one but `uid` (and root) can change what the folder open as `fd` holds: a
    folder owned by `uid` (or, not `leaf`, by root) without group or other write permission;
    not `leaf`, also one of `uid`'s that is sticky (others may add names there but not replace
    this user's)."""
    import stat

    try:
        st = os.fstat(fd)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if leaf:
        return st.st_uid == uid and not st.st_mode & 0o022
    if st.st_uid not in (uid, 0):
        return False
    return not st.st_mode & 0o022 or (st.st_uid == uid and st.st_mode & stat.S_ISVTX != 0)


def compile_in_place(folder, cache=None):
    """Byte-compiles the module copy the evaluator wrote for this interpreter (sources only,
    src/trex/oreval/module_copy.h), before anything of it is imported: unchecked-hash pycs, as
    the evaluator's own compile writes for a fresh interpreter's copy, so that neither this
    interpreter nor a child that imports a module lazily (trex_pulp) compiles it again. The
    folder is the evaluator's and read-only to every child. A file that cannot be compiled is
    left to the import, which compiles it in memory (and reports its error as before).

    `cache` (pyc_cache_folder()'s descriptor) keeps each compiled file under the BLAKE2b-256 of
    this interpreter's version, its magic number and the source's bytes, with the BLAKE2b-256 of
    the pyc after it: a source compiled once by this interpreter is not compiled again by the next
    run (about 17 ms of a run's start). An entry is used only when its own digest checks and
    its pyc's header is the one compile would write for this source (magic, unchecked hash, the
    source's hash); anything else is compiled as without a cache."""
    # What py_compile does for an unchecked-hash pyc (the same bytes), with the import system's
    # own helpers, always loaded: importing py_compile (and traceback, textwrap, tokenize with
    # it) cost this start about a third of the compile's time, and every child's fork the pages.
    import _imp

    digest = None
    if cache is not None:
        # Nothing of the cache may stop this interpreter before "ready" (every warm run would
        # fail): whatever goes wrong on its path means no cache, and the files are compiled.
        try:
            digest = digest_constructor()
        except Exception:
            digest = None
        if digest is None:
            cache = None

    boot = sys.modules["_frozen_importlib_external"]
    version = (sys.version + "\0").encode() + boot._RAW_MAGIC_NUMBER.to_bytes(4, "little")
    written = False
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            target = boot.cache_from_source(path)
            if os.path.exists(target):
                continue
            try:
                with open(path, "rb") as f:
                    source = f.read()
                source_hash = _imp.source_hash(boot._RAW_MAGIC_NUMBER, source)
                entry = None
                data = None
                if cache is not None:
                    try:
                        entry = digest(version + source).hexdigest()
                        data = cached_pyc(cache, entry, source_hash, digest)
                    except Exception:
                        entry, data = None, None
                if data is None:
                    code = compile(source, path, "exec", dont_inherit=True)
                    data = boot._code_to_hash_pyc(code, source_hash, False)
                    if entry is not None:
                        try:
                            written = store_pyc(cache, entry, data + digest(data).digest()) or written
                        except Exception:
                            pass
                os.makedirs(os.path.dirname(target), exist_ok=True)
                boot._write_atomic(target, data, 0o644)
                # Whatever the umask, the children (another uid) must read them.
                os.chmod(os.path.dirname(target), 0o755)
                os.chmod(target, 0o644)
            except (OSError, SyntaxError, ValueError):
                pass
    if written:
        try:
            prune_pyc_cache(cache)
        except Exception:
            pass


def digest_constructor():
    """The cache's digest: BLAKE2b with 32-byte digests (BLAKE2b-256), from the interpreter's own
    C module, without importing hashlib (which this start would pay for); called on bytes, it
    returns an object with digest() and hexdigest(). None when _blake2 does not import: then
    there is no cache. Not SHA-256 (until session 28): this interpreter's C SHA-256 hashed about
    300 MB/s here, BLAKE2b 850, and a start digests every source and every entry it reads (about
    0.5 MB: 1.6 ms against 0.55)."""
    try:
        from _blake2 import blake2b
    except ImportError:
        return None

    def digest(data):
        return blake2b(data, digest_size=32)

    return digest


def cached_pyc(cache, entry, source_hash, digest):
    """The pyc stored as `entry` in the cache folder open as `cache` when it is whole (its
    32-byte trailer, by `digest`: digest_constructor's) and is an unchecked-hash pyc of this
    interpreter for a source with `source_hash`; else None."""
    import stat

    # O_NONBLOCK: a FIFO (or a device) put there would block this open, and the interpreter's
    # start with it, until a writer came; it is opened at once and then refused as not a file.
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=cache)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with open(fd, "rb", closefd=False) as f:
            stored = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    data, trailer = stored[:-32], stored[-32:]
    if len(stored) < 48 or digest(data).digest() != trailer:
        return None
    magic = sys.modules["_frozen_importlib_external"]._RAW_MAGIC_NUMBER.to_bytes(4, "little")
    # Header: magic, flags (1: hash-based, check_source off), the source's hash (PEP 552).
    if data[:4] != magic or data[4:8] != (1).to_bytes(4, "little") or data[8:16] != source_hash:
        return None
    return data


def store_pyc(cache, entry, stored):
    """Publishes `stored` as `entry` in the cache folder open as `cache`: written to a new
    temporary there (O_EXCL: never an existing name or link) and renamed over the entry, both
    in that folder. Whether it was; a full or read-only cache is not an error (the next run
    compiles again)."""
    tmp = "%s.tmp.%d" % (entry, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=cache)
    except OSError:
        return False
    try:
        with open(fd, "wb") as f:
            f.write(stored)
        os.rename(tmp, entry, src_dir_fd=cache, dst_dir_fd=cache)
        return True
    except OSError:
        try:
            os.unlink(tmp, dir_fd=cache)
        except OSError:
            pass
        return False


def prune_pyc_cache(cache):
    """Keeps the PYC_CACHE_ENTRIES entries written last in the cache folder open as `cache`
    (temporaries of a run that died too)."""
    try:
        entries = []
        with os.scandir(cache) as names:
            for e in names:
                try:
                    entries.append((e.stat(follow_symlinks=False).st_mtime, e.name))
                except OSError:
                    pass
        entries.sort(reverse=True)
        for _, name in entries[PYC_CACHE_ENTRIES:]:
            try:
                os.unlink(name, dir_fd=cache)
            except OSError:
                pass
    except OSError:
        pass


_COMPILED = set()  # folders compile_module_copy compiled in this process


def compile_module_copy(folder, setting):
    """compile_in_place of the module copy in `folder` with the cache that `setting` names
    (open_pyc_cache: TREX_PYC_CACHE as warm_pool.cc passes it), once per process: the bootstrap
    calls it, and then the zygote's script, run from its pyc, finds it done. Nothing of the
    cache stops the interpreter: a cache that cannot be opened is none."""
    folder = os.path.abspath(folder)
    if folder in _COMPILED:
        return
    try:
        cache = open_pyc_cache(setting)
    except Exception:
        cache = None  # no cache; never a zygote that does not start
    try:
        compile_in_place(folder, cache)
    finally:
        if cache is not None:
            os.close(cache)  # no child inherits it (they are forked, not exec'd)
    _COMPILED.add(folder)


def compiled_code(path):
    """The code object of the source file `path` from the pyc that compile_in_place wrote for it
    (its __pycache__ entry): the pyc is used only when its header is the one compile_in_place
    writes for these source bytes (this interpreter's magic, unchecked hash, the source's hash);
    else, or where there is none, the source is compiled here (a syntax error raised as by
    compile). The pyc's code has `path` as its file name, as the import gives it."""
    import _imp
    import marshal

    boot = sys.modules["_frozen_importlib_external"]
    with open(path, "rb") as f:
        source = f.read()
    try:
        with open(boot.cache_from_source(path), "rb") as f:
            data = f.read()
        header = boot._RAW_MAGIC_NUMBER.to_bytes(4, "little") + (1).to_bytes(4, "little")
        if data[:8] == header and data[8:16] == _imp.source_hash(boot._RAW_MAGIC_NUMBER, source):
            code = marshal.loads(memoryview(data)[16:])
            # An entry from the cache names the path it was compiled at in an earlier run.
            _imp._fix_co_filename(code, path)
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass
    return compile(source, path, "exec", dont_inherit=True)
