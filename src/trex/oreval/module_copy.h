// trex's Python modules (python/trex_modeling, the gurobipy and coptpy skins over it, the PuLP
// solver class, and the runner), carried into each sandbox folder.
//
// The sandboxed interpreter runs as an unprivileged user (nobody, or an unmapped uid), which
// cannot enter a clone that sits in a folder other users may not search (root's home, any
// `mktemp -d`). So the evaluator, which can read the clone, takes the module's files into
// memory once per process, byte-compiled with unchecked-hash pycs (loaded without a source
// check, so no completion pays for compiling them), and writes a copy into every sandbox
// folder, which the child can always read. A copy the child changes only affects its own run.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trex::oreval {

// Relative path and contents of every file of the module, byte code included.
struct ModuleFiles {
  std::vector<std::pair<std::string, std::string>> files;
};

// The module in `pydir` (holding the packages and trex_eval_runner.py), compiled by `python`;
// read and compiled once per (python, pydir) for the life of the process. Throws InputError
// naming the folder when a file cannot be read. When the interpreter cannot compile, the
// sources alone are carried and the child compiles them in memory. With `compiled` false, the
// sources alone, without starting an interpreter to compile them: for a warm interpreter,
// which compiles its own copy in place before it imports it (trex_eval_zygote.py), one
// interpreter start (`python3 -m compileall`, about 40 ms) fewer per trex run.
const ModuleFiles& module_files(const std::string& python, const std::string& pydir, bool compiled = true);

// Writes the files under `into` (created), readable by anyone, and returns the runner's path.
std::string install_module(const ModuleFiles& module, const std::string& into);

}  // namespace trex::oreval
