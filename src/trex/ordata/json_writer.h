// A small streaming JSON writer for the corpus lines.
//
// The samples are long strings (statement, LP text, program) in a fixed shape, and building
// a JSON document object per line cost more than solving the instance; this writer appends
// straight to a string. Doubles are written in the shortest form that reads back the same
// value (std::to_chars), so lines are byte-identical across runs and read back exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trex::ordata {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  // Inside an object: the next value's key.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double v);  // NaN and infinities are written as null
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(int64_t(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();

  // Appends s as a JSON string literal (with quotes).
  static void escape(std::string& out, std::string_view s);

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void separate();

  std::string& out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace trex::ordata
