// Reading and writing model files by their extension: .lp and .mps (also .free.mps/.fmps).
#pragma once

#include <string>

#include "trex/lp/model.h"

namespace trex::lp {

enum class FileFormat { kLp, kMps };

// Throws InputError naming the file for an unknown extension.
FileFormat format_of(const std::string& path);

// Reads and parses; every error is an InputError naming the file and line.
Model read_model_file(const std::string& path);

// Writes atomically (temporary name, then rename).
void write_model_file(const Model& model, const std::string& path);

}  // namespace trex::lp
