"""Spawn the solve helper N times on one record, as trex does (stdin a file, stdout a pipe); CPU of the children."""
import os, resource, subprocess, sys, time
helper, n = sys.argv[1], int(sys.argv[2])
rec = open(sys.argv[3],"rb").read()
env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
c0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
for i in range(n):
    fd = os.memfd_create("in"); os.write(fd, rec); os.lseek(fd, 0, 0)
    dl = time.clock_gettime(time.CLOCK_MONOTONIC) + 30
    p = subprocess.run([helper, "auto", "%.17g" % dl, str(2<<30), "record", "f"], stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    os.close(fd)
    if i == 0: print(p.stdout[:200])
c1 = resource.getrusage(resource.RUSAGE_CHILDREN); t1 = time.perf_counter()
print("per solve: wall %.2f ms, user %.2f ms, sys %.2f ms, minflt %.0f" % (1000*(t1-t0)/n, 1000*(c1.ru_utime-c0.ru_utime)/n, 1000*(c1.ru_stime-c0.ru_stime)/n, (c1.ru_minflt-c0.ru_minflt)/n))
