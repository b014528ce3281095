// A warm interpreter's request (python/trex_eval_zygote.py's docstring: {"workdir", "read_only",
// "argv", "env", "limits", "allow_weak"}, as warm_pool.cc writes it with nlohmann's dump), read in
// C by the child forked ahead of it (zygote_serve.cc), so that the child puts every sandbox layer
// on itself before it returns to Python, and Python gets the program's arguments and environment
// ready to use instead of running json and ctypes between the fork and the layers.
//
// Strict where Python's json was lenient, so a request that parses here means the same as it
// did there and anything else runs nothing: every key present with its type (strings, arrays of
// strings, non-negative integers that fit, true or false), no NUL in a string (it could not reach
// a path or the environment whole), no control character unescaped, well-formed \u escapes
// (a lone surrogate is refused), nothing after the object. Unknown keys are skipped; a key given
// twice keeps its last value (as json.loads does).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace trex::oreval {

struct ZygoteRequest {
  const char* workdir = nullptr;
  std::vector<const char*> read_only, argv, env;
  int cpu_s = 0, open_files = 0;
  uint64_t memory_bytes = 0, file_bytes = 0;
  bool allow_weak = false;
};

// Parses `size` bytes of `text` into `*out`, whose strings point into `arena` (at least size + 1
// bytes, the caller's: every string decoded is shorter than its JSON form). Returns nullptr, or
// what was wrong (a static string naming the key or the fault).
const char* parse_zygote_request(const char* text, size_t size, char* arena, ZygoteRequest* out);

}  // namespace trex::oreval
