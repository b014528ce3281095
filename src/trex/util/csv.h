// Reading CSV text (RFC 4180): fields separated by commas, records by LF or CRLF; a quoted
// field may hold commas, doubled quotes ("") and newlines. Blank lines are skipped.
#pragma once

#include <string>
#include <vector>

namespace trex {

struct CsvRecord {
  long line = 0;  // 1-based line the record starts on (records may span lines)
  std::vector<std::string> fields;
};

// Throws InputError naming `file` and the line when a quoted field is never closed (a file cut
// off inside a field).
std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file);

}  // namespace trex
