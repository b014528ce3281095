// Errors a user can cause: a malformed file, a bad flag, an unknown name.
//
// Every such error is an InputError that knows where it happened (a file and a line, or a
// field) and renders as one line: "FILE:LINE: message", "FIELD: message" or "message".
// The command line catches it at the top, prints that line on stderr and exits with
// kUsageExitCode. Errors that are trex's own fault (a broken invariant) stay std::logic_error.
#pragma once

#include <stdexcept>
#include <string>

namespace trex {

// Exit code for usage and input errors, shared by every subcommand.
inline constexpr int kUsageExitCode = 2;

class InputError : public std::runtime_error {
 public:
  // A problem in a file: line is 1-based; 0 means "the file as a whole".
  InputError(std::string file, long line, const std::string& message);
  // A problem in a named field or flag (file empty, line 0).
  static InputError field(const std::string& field, const std::string& message);
  // A problem with no better place to name.
  explicit InputError(const std::string& message);

  const std::string& file() const { return file_; }
  long line() const { return line_; }
  // The bare message without the location prefix.
  const std::string& detail() const { return detail_; }

 private:
  InputError(std::string file, long line, std::string detail, std::string rendered);
  std::string file_;
  long line_ = 0;
  std::string detail_;
};

}  // namespace trex
