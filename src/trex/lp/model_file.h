// Reading and writing model files by their extension: .lp, .mps (also .fmps), and GNU
// MathProg .mod (read only, translated by glpsol; see mathprog.h).
#pragma once

#include <string>
#include <vector>

#include "trex/lp/model.h"
#include "trex/lp/mps_format.h"

namespace trex::lp {

enum class FileFormat { kLp, kMps, kMathProg };

struct ReadOptions {
  MpsOptions mps;                       // for .mps files
  std::vector<std::string> data_files;  // for .mod files: MathProg data (.dat) files
  double time_limit_s = 0;              // wall-clock seconds for the read, glpsol's translation
                                        // of a .mod included (0: none); see ReadTimeLimit
};

// Throws InputError naming the file for an unknown extension.
FileFormat format_of(const std::string& path);

// Reads and parses; every error is an InputError naming the file and line. Data files are
// only for MathProg models: giving them with another format is an InputError. A read (or
// MathProg translation) that outlives options.time_limit_s throws ReadTimeLimit.
Model read_model_file(const std::string& path, const ReadOptions& options = {});

// Writes atomically (temporary name, then rename). MathProg is not written.
void write_model_file(const Model& model, const std::string& path);

}  // namespace trex::lp
