// trex, the command users run: it picks the program that does the work and replaces itself
// with it (execv; git runs its dashed commands the same way). `trex solve ...` runs trex-solve,
// a program with only the lp part inside; `trex eval run|list|equiv ...` runs trex-eval, which
// has solve and those three with the lp and oreval parts; everything else runs trex-full, which
// has every subcommand (solve and eval included). All lie next to this program.
//
// Why: a process start costs the loading of every shared library the program links. trex-full
// links libcurl, Open MPI, SentencePiece, SQLite and the rest (64 libraries, 39,000 symbol
// relocations); measured with hyperfine on this machine, `trex-full --version` took about twice
// as long as `cbc -quit` (65 vs 35 ms), which made trex slower than the cbc program on every
// small model. trex-solve links what the cbc program links plus zstd. trex-eval the same
// eleven libraries: `--version` 4.0-4.5 ms of CPU against trex-full's 27-31 ms (perf stat,
// session 27), which every `trex eval run` paid before its first program.
//
// This file uses the C library only, so that the choice costs well under a millisecond.
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

// The directory of this program's file, with a trailing '/'; false when unknown.
bool own_directory(char* dir, size_t size) {
  ssize_t n = readlink("/proc/self/exe", dir, size - 1);
  if (n <= 0 || size_t(n) >= size - 1) return false;
  dir[n] = '\0';
  char* slash = strrchr(dir, '/');
  if (!slash) return false;
  slash[1] = '\0';
  return true;
}

// The `trex eval` subcommands that trex-eval has (apps/trex/eval_command.cc); `eval gen` needs
// the chat client and `eval --help` lists gen too, so they and anything else are trex-full's.
bool eval_subcommand_in_trex_eval(const char* subcommand) {
  return strcmp(subcommand, "run") == 0 || strcmp(subcommand, "list") == 0 || strcmp(subcommand, "equiv") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  char path[PATH_MAX];
  if (!own_directory(path, sizeof path)) {
    fprintf(stderr, "trex: internal error: cannot find trex's own directory (/proc/self/exe)\n");
    return 1;
  }
  // Only the subcommand in first place counts: `trex --help solve` is trex-full's to answer.
  bool solve = argc > 1 && strcmp(argv[1], "solve") == 0;
  bool eval = argc > 2 && strcmp(argv[1], "eval") == 0 && eval_subcommand_in_trex_eval(argv[2]);
  const char* program = solve ? "trex-solve" : eval ? "trex-eval" : "trex-full";
  if (strlen(path) + strlen(program) >= sizeof path) {
    fprintf(stderr, "trex: internal error: trex's directory name is too long\n");
    return 1;
  }
  strcat(path, program);
  // OpenBLAS starts a worker thread per core when it is loaded, before main; trex-solve never
  // uses them (CbcMain runs with one BLAS thread, see lp/cbc_solver.cc), and making them cost
  // about 1 ms of a tiny model's 8-10 ms. Nor does trex-eval (its solves run in the solve
  // helper, and every process it starts gets an environment of its own with one BLAS thread):
  // 0.4 ms of its start. A value the user set stays.
  if (solve || eval) setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  // argv[0] stays as the user typed it, so usage lines still say "trex".
  execv(path, argv);
  fprintf(stderr, "trex: internal error: cannot run %s: %s (it belongs next to the trex program)\n", path,
          strerror(errno));
  return 1;
}
