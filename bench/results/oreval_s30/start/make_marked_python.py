"""A copy of python/ with marks for timeline.sh (session 30, engineer evalstart): each mark is a
close() of descriptor 5000+N (EBADF, harmless), which `perf trace -e close` shows with its number.
Marks: 5001 trex_eval_pyc imported (the bootstrap's first import after the attach), 5002 the
zygote script starts, 5003 its standard-library imports done, 5004 the trex modules imported,
5005 main() starts, 5007 probe and shared network namespace, 5008 workspace, 5009 warm_up,
5010 warm_up_runner, 5011 warm_request_path, 5012 gc.collect + freeze, 5013 malloc_trim,
5014 huge_text, 5015 fork_file_pages, 5016 private_pages, 5017 the survey set up. The old
python/ (before trex_sandbox_probe_in_shared_netns) had 5006 between the probe and the move.

Usage: python3 make_marked_python.py SOURCE_PYTHON_DIR TARGET_DIR"""
import os
import shutil
import sys

src, dst = sys.argv[1:3]
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
p = os.path.join(dst, "trex_eval_zygote.py")
s = open(p).read()
s = s.replace('"""\nimport _thread\n', '"""\nimport os as _o\ndef _M(n):\n    try: _o.close(5000+n)\n    except OSError: pass\n_M(2)\nimport _thread\n', 1)
s = s.replace('import sys\n\n_HERE', 'import sys\n_M(3)\n\n_HERE', 1)
s = s.replace('import coptpy  # noqa: E402,F401\n', 'import coptpy  # noqa: E402,F401\n_M(4)\n', 1)
marks = [('    os.environ.pop("LD_BIND_NOW", None)\n', 5, '    '),
         ('    missing, shared_netns = probe(lib, buf)\n', 7, '    '),
         ('    missing = lib.trex_sandbox_probe(buf, len(buf))\n', 6, '    '),
         ('    shared_netns = lib.trex_sandbox_share_netns() == 1\n', 7, '    '),
         ('    workspace = attach_workspace(lib, sys.argv)\n', 8, '    '),
         ('    trex_eval_warmup.warm_up()\n', 9, '    '), ('    trex_eval_warmup.warm_up_runner()\n', 10, '    '),
         ('    warm_request_path()\n', 11, '    '), ('    gc.freeze()\n', 12, '    '), ('        trim(0)\n', 13, '    '),
         ('    huge_text(lib)\n', 14, '    '), ('        fork_file_pages(lib)\n', 15, '    '),
         ('    pages = private_pages() if copy_ahead_wanted(sys.argv) else ()\n', 16, '    '),
         ('    training = PagesChildrenWrite(() if survey_in_c(lib, pages) else pages)\n', 17, '    ')]
new_probe = "missing, shared_netns = probe(lib, buf)" in s
for line, n, indent in marks:
    if new_probe and "trex_sandbox_probe(" in line or new_probe and "trex_sandbox_share_netns" in line:
        continue  # the old library's fallback inside probe(): not on the path
    if s.count(line) == 1:
        s = s.replace(line, line + indent + "_M(%d)\n" % n, 1)
open(p, "w").write(s)
p = os.path.join(dst, "trex_eval_pyc.py")
s = open(p).read()
s = s.replace("\nimport os\n", "\nimport os\ntry: os.close(5001)\nexcept OSError: pass\n", 1)
open(p, "w").write(s)
