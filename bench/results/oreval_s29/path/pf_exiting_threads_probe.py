# Field 52 (exit_code) of each task when a NON-leader thread calls os._exit(5), and when the
# leader ends by pthread_exit (ctypes) while another thread later calls os._exit(6).
import os, sys, time, threading, ctypes
how = sys.argv[1]
pid = os.fork()
if pid == 0:
    b = bytearray(1 << 29)
    for i in range(0, len(b), 4096): b[i] = 1
    if how == "thread":
        threading.Thread(target=lambda: (time.sleep(0.05), os._exit(5))).start()
        time.sleep(10)
    else:
        threading.Thread(target=lambda: (time.sleep(0.1), os._exit(6))).start()
        time.sleep(0.02)
        ctypes.CDLL(None).pthread_exit(None)
    os._exit(99)
pfd = os.pidfd_open(pid)
import select
seen = {}
t0 = time.perf_counter()
while True:
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                f = open(f"/proc/{pid}/task/{t}/stat").read()
            except OSError:
                continue
            p = f[f.rfind(")")+2:].split()
            key = (t, p[0], int(p[6]) & 4, int(p[49]))
            if key not in seen: seen[key] = round((time.perf_counter()-t0)*1e3, 2)
    except OSError:
        pass
    p = select.poll(); p.register(pfd, select.POLLIN)
    if p.poll(0): break
_, st = os.waitpid(pid, 0)
print(how, "leader", pid, "waitpid", st)
for k, v in sorted(seen.items(), key=lambda kv: kv[1]): print("  at %.2f ms task %s state %s PF_EXITING %d exit_code %d" % (v, *k))
