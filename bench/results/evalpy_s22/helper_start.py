import os, resource, subprocess, sys, time
helper, n = sys.argv[1], int(sys.argv[2])
c0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
for i in range(n):
    p = subprocess.run([helper, "bad"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert p.returncode == 124
c1 = resource.getrusage(resource.RUSAGE_CHILDREN); t1 = time.perf_counter()
print("start+exit only: wall %.2f ms, user %.2f ms, sys %.2f ms, minflt %.0f" % (1000*(t1-t0)/n, 1000*(c1.ru_utime-c0.ru_utime)/n, 1000*(c1.ru_stime-c0.ru_stime)/n, (c1.ru_minflt-c0.ru_minflt)/n))
