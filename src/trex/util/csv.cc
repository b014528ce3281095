#include "trex/util/csv.h"

#include "trex/util/error.h"

namespace trex {

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& file) {
  std::vector<CsvRecord> records;
  CsvRecord record;
  record.line = 1;
  std::string field;
  bool quoted = false, any = false;
  long line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        record.fields.push_back(std::move(field));
        records.push_back(std::move(record));
      }
      field.clear();
      record = CsvRecord{};
      any = false;
      record.line = ++line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) throw InputError(file, record.line, "unterminated quoted CSV field (file cut off?)");
  if (any || !field.empty()) {
    record.fields.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace trex
