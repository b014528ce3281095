#include "trex/profile/trace_reader.h"

#include <cctype>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::profile {

KernelTrace read_trace(const std::string& path) {
  std::string text = read_file(path);
  size_t i = 0;
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;  // a UTF-8 BOM
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size()) throw InputError(path, 0, "empty file: not a trace");
  if (text[i] == '{' || text[i] == '[') return read_chrome_trace(text, path);
  // msprof writes its CSV headers with these names; anything else is not a format we read.
  size_t eol = text.find('\n', i);
  std::string header = text.substr(i, eol == std::string::npos ? std::string::npos : eol - i);
  if (header.find("Op Name") != std::string::npos && header.find("Task Duration(us)") != std::string::npos)
    return read_msprof_op_summary(text.substr(i), path);
  throw InputError(path, 0,
                   "unknown trace format: neither Chrome trace JSON (trex, PyTorch/Kineto) nor an msprof "
                   "op_summary CSV (header with \"Op Name\" and \"Task Duration(us)\")");
}

}  // namespace trex::profile
