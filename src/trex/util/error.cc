#include "trex/util/error.h"

#include <utility>

namespace trex {

namespace {

std::string render(const std::string& file, long line, const std::string& detail) {
  if (file.empty()) return detail;
  if (line <= 0) return file + ": " + detail;
  return file + ":" + std::to_string(line) + ": " + detail;
}

}  // namespace

InputError::InputError(std::string file, long line, std::string detail, std::string rendered)
    : std::runtime_error(std::move(rendered)),
      file_(std::move(file)),
      line_(line),
      detail_(std::move(detail)) {}

InputError::InputError(std::string file, long line, const std::string& message)
    : InputError(file, line, message, render(file, line, message)) {}

InputError::InputError(const std::string& message) : InputError("", 0, message, message) {}

InputError InputError::field(const std::string& field, const std::string& message) {
  return InputError(field, 0, message, field + ": " + message);
}

}  // namespace trex
