#include "trex/ordata/family_util.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace trex::ordata {

std::string num(double v) {
  if (v == 0) return "0";  // never "-0"
  char buf[64];
  // Fixed notation in the usual range ("500000", never "5e+05"): the reviewer reads digits.
  const double a = std::fabs(v);
  auto [end, ec] = a >= 1e-4 && a < 1e15 ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                                         : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string key(const std::string& display) {
  std::string k;
  for (char ch : display) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) k += char(std::tolower(c));
    else if (!k.empty() && k.back() != '_') k += '_';
  }
  while (!k.empty() && k.back() == '_') k.pop_back();
  return k;
}

std::vector<std::string> first(const std::vector<std::string>& names, int n) {
  if (n < 0 || size_t(n) > names.size()) throw std::logic_error("name list too short");
  return {names.begin(), names.begin() + n};
}

std::vector<std::string> draw_names(const std::vector<std::string>& names, int n, Rng& rng) {
  std::vector<std::string> all = names;
  rng.shuffle(all);
  return first(all, n);
}

std::vector<std::string> draw_run(const std::vector<std::string>& names, int n, Rng& rng) {
  if (n < 0 || size_t(n) > names.size()) throw std::logic_error("name list too short");
  const long start = rng.integer(0, long(names.size()) - n);
  return {names.begin() + start, names.begin() + start + n};
}

std::string draw_wording(Rng& rng, const std::vector<std::string>& wordings) { return rng.pick(wordings); }

std::string join_and(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) s += i + 1 == items.size() ? " and " : ", ";
    s += items[i];
  }
  return s;
}

Table table(std::string caption, std::string row_header, std::vector<std::string> columns,
            std::vector<std::string> rows) {
  Table t;
  t.caption = std::move(caption);
  t.row_header = std::move(row_header);
  t.cells.assign(rows.size(), std::vector<std::string>(columns.size()));
  t.columns = std::move(columns);
  t.rows = std::move(rows);
  return t;
}

std::string cap(std::string s) {
  if (!s.empty()) s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

void require_industries(const std::vector<std::string>& industries, const char* family) {
  if (industries.size() < 4) throw std::logic_error(std::string(family) + ": fewer than four industries");
}

}  // namespace trex::ordata
