#include "trex/lp/model_file.h"

#include "trex/lp/lp_format.h"
#include "trex/lp/mathprog.h"
#include "trex/lp/mps_format.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::lp {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t k = 0; k < suffix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + k])) != suffix[k])
      return false;
  return true;
}

}  // namespace

FileFormat format_of(const std::string& path) {
  if (ends_with(path, ".lp")) return FileFormat::kLp;
  if (ends_with(path, ".mps") || ends_with(path, ".fmps")) return FileFormat::kMps;
  if (ends_with(path, ".mod")) return FileFormat::kMathProg;
  throw InputError(path, 0, "unknown model format (expected .lp, .mps or .mod)");
}

Model read_model_file(const std::string& path, const ReadOptions& options) {
  FileFormat format = format_of(path);
  if (format == FileFormat::kMathProg) return read_mathprog(path, options.data_files, options.time_limit_s);
  if (!options.data_files.empty())
    throw InputError::field("--data", "data files go with MathProg models (.mod), not with " + path);
  ReadLimit limit(options.time_limit_s);
  std::string text = read_file(path);
  return format == FileFormat::kLp ? read_lp(text, path, limit) : read_mps(text, path, options.mps, limit);
}

void write_model_file(const Model& model, const std::string& path) {
  FileFormat format = format_of(path);
  if (format == FileFormat::kMathProg)
    throw InputError(path, 0, "trex does not write MathProg; use .lp or .mps");
  write_file_atomic(path, format == FileFormat::kLp ? write_lp(model) : write_mps(model));
}

}  // namespace trex::lp
