"""The fixed start-up cost of the evaluator's processes (issue 19): CPU (user + system, from
RUSAGE_CHILDREN) and minor page faults of starting each command, the commands alternating, N
rounds; prints the medians. An empty C++ program, linked with and without tcmalloc_minimal
(compiled here with g++), tells tcmalloc's own start from the rest of trex-full's.

Usage: python3 bench/oreval_start_cost.py BUILD_DIR [ROUNDS]   (default 20)
Timed: run it in the quiet lane (flock /work/notes/quiet.lock nice -n 0 ...).
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 20
    scratch = tempfile.mkdtemp(prefix="trex-start-cost-")
    source = os.path.join(scratch, "empty.cc")
    with open(source, "w") as f:
        f.write("int main() { return 0; }\n")
    plain, tcmalloc = os.path.join(scratch, "empty"), os.path.join(scratch, "empty_tcmalloc")
    subprocess.run(["g++", "-O2", source, "-o", plain], check=True)
    subprocess.run(["g++", "-O2", source, "-o", tcmalloc, "-Wl,--no-as-needed", "-ltcmalloc_minimal"], check=True)
    commands = {"empty C++ program": [plain], "the same with tcmalloc_minimal": [tcmalloc],
                "trex-full --version": [os.path.join(build, "trex-full"), "--version"],
                "trex --version (launcher)": [os.path.join(build, "trex"), "--version"],
                "python3 -I -B -c pass": ["/usr/bin/python3", "-I", "-B", "-c", "pass"]}
    results = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            results[name].append((1000 * cpu, after.ru_minflt - before.ru_minflt))
    for name, runs in results.items():
        print("%-32s CPU median %.1f ms (min %.1f), minor faults median %d" %
              (name, statistics.median(r[0] for r in runs), min(r[0] for r in runs), statistics.median(r[1] for r in runs)))
    for path in (source, plain, tcmalloc):
        os.unlink(path)
    os.rmdir(scratch)


if __name__ == "__main__":
    main()
