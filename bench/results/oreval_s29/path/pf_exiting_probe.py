# Does /proc/PID/stat show PF_EXITING (flags 0x4) and the final exit code (field 52) before the
# address space teardown ends (pidfd readable / waitpid)? One child, 1 GiB touched, os._exit(7).
import os, sys, time, signal
how = sys.argv[1] if len(sys.argv) > 1 else "exit"
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    b = bytearray(1 << 30)
    for i in range(0, len(b), 4096): b[i] = 1
    os.write(w, b"x"); os.close(w)
    if how == "exit": os._exit(7)
    if how == "kill": os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)
os.close(w); os.read(r, 1)
t0 = time.perf_counter()
pfd = os.pidfd_open(pid)
import select
first = None
while True:
    try:
        f = open(f"/proc/{pid}/stat").read()
    except OSError:
        f = None
    if f:
        parts = f[f.rfind(")")+2:].split()
        state, flags, code = parts[0], int(parts[6]), int(parts[49])
        if flags & 4 and first is None:
            first = (time.perf_counter() - t0, state, code)
    p = select.poll(); p.register(pfd, select.POLLIN)
    if p.poll(0):
        done = time.perf_counter() - t0
        break
_, st = os.waitpid(pid, 0)
print(how, "PF_EXITING seen at %.3f ms (state %s, exit_code field %d)" % (first[0]*1e3, first[1], first[2]) if first else "never seen",
      "; pidfd readable at %.3f ms; waitpid status %d" % (done*1e3, st))
