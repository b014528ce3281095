// MPS reader (free and fixed). One pass (two when the layout is detected) over the text, line by line, with string_view tokens: every line
// is scanned a bounded number of times, so a huge or binary input fails fast and in linear time.
//
// Rows are created in the ROWS section with their type only; the right-hand side and range
// of each row are collected on the side and turned into [lower, upper] at ENDATA, because
// RHS and RANGES may name a row in either order. Bounds are applied as they come and checked
// at ENDATA (a later bound may repair an earlier one), naming the last bound line of a
// variable that ends up with lower > upper.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "trex/lp/mps_format.h"
#include "trex/util/error.h"

namespace trex::lp {

namespace {

// Values this large in RHS, RANGES and BOUNDS mean "no bound", as in every MPS writer.
constexpr double kMpsInfinity = 1e30;

// A data line never needs more fields than this; more means the line is not MPS.
constexpr size_t kMaxFields = 6;

enum class Section {
  kNone, kName, kObjSense, kRows, kColumns, kRhs, kRanges, kBounds, kSos, kQuadObj, kQMatrix,
  kQcMatrix, kEndData
};

// Where a section may come: each rank after the one before; sections of one rank (RHS and
// RANGES; SOS and the quadratic ones) in any order among themselves.
int rank_of(Section s) {
  switch (s) {
    case Section::kNone: return 0;
    case Section::kName: return 1;
    case Section::kObjSense: return 2;
    case Section::kRows: return 3;
    case Section::kColumns: return 4;
    case Section::kRhs:
    case Section::kRanges: return 5;  // either order: some writers put RANGES first
    case Section::kBounds: return 7;
    case Section::kSos:
    case Section::kQuadObj:
    case Section::kQMatrix:
    case Section::kQcMatrix: return 8;
    case Section::kEndData: return 9;
  }
  return 0;
}

// Fixed MPS: fields 1-6 in columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61 (1-based).
constexpr size_t kFixedStart[6] = {1, 4, 14, 24, 39, 49};
constexpr size_t kFixedEnd[6] = {3, 12, 22, 36, 47, 61};

// Row-map values that are not indices of model rows.
constexpr int kObjectiveRow = -1;
constexpr int kDroppedRow = -2;  // an N row after the first: entries naming it are ignored

struct RowInfo {
  char type;          // 'L', 'G' or 'E'
  double rhs = 0;
  double range = 0;
  bool has_range = false;
  long line = 0;      // where the row's bounds were last set (ROWS, RHS or RANGES)
};

// RHS, RANGES and BOUNDS lines may carry a set name; only the first set named counts, as
// in every MPS reader, and lines of later sets are skipped.
struct SetFilter {
  std::string_view name;
  bool known = false;
  bool accepts(std::string_view set) {
    if (!known) {
      known = true;
      name = set;
    }
    return set == name;
  }
};

struct VarInfo {
  bool lower_set = false;  // the lower bound was given explicitly (see the UP rule)
  bool from_marker = false;  // integer by an INTORG marker
  long bound_line = 0;     // last BOUNDS line naming the variable, 0 if none
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

char upper_ascii(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (upper_ascii(a[k]) != upper_ascii(b[k])) return false;
  return true;
}

// A token for an error message: quoted, and cut short so a 100 MB token makes a short line.
std::string quote(std::string_view token) {
  constexpr size_t kMax = 40;
  if (token.size() <= kMax) return "'" + std::string(token) + "'";
  return "'" + std::string(token.substr(0, kMax)) + "...'";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The six fixed fields of a data line, trimmed, or false when the line does not fit the
// fixed columns (a tab, or text in a column between fields or past column 61). A field 3 or
// 5 that begins with '$' starts a comment: it and the fields after it are blank.
bool fixed_fields(std::string_view line, std::string_view (&f)[6], bool* comment) {
  *comment = false;
  if (line.find('\t') != std::string_view::npos) return false;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  for (int k = 0; k < 6; ++k) f[k] = {};
  size_t pos = 0;
  for (int k = 0; k < 6; ++k) {
    // The gap before field k must be blank.
    size_t gap_end = std::min(kFixedStart[k], line.size());
    for (; pos < gap_end; ++pos)
      if (line[pos] != ' ') return false;
    if (pos >= line.size()) return true;
    if ((k == 2 || k == 4) && line[kFixedStart[k]] == '$') {
      *comment = true;
      return true;
    }
    size_t end = std::min(kFixedEnd[k], line.size());
    f[k] = trim(line.substr(kFixedStart[k], end - kFixedStart[k]));
    pos = end;
  }
  return pos >= line.size();
}

// The line at `pos` (without its '\n'), advancing `pos` past it; false at the end.
bool next_line(std::string_view text, size_t& pos, std::string_view* line) {
  if (pos >= text.size()) return false;
  size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) end = text.size();
  *line = text.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

bool is_sense_word(std::string_view word) {
  for (const char* w : {"MAX", "MAXIMIZE", "MAXIMISE", "MIN", "MINIMIZE", "MINIMISE"})
    if (iequals(word, w)) return true;
  return false;
}

class MpsReader {
 public:
  MpsReader(std::string_view text, const std::string& filename, const MpsOptions& options, ReadLimit limit)
      : text_(text), filename_(filename), options_(options), limit_(limit) {}

  Model read();

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(filename_, line_no_, message);
  }
  [[noreturn]] void fail_at(long line, const std::string& message) const {
    throw InputError(filename_, line, message);
  }

  void check_bytes(std::string_view line) const;
  bool split(std::string_view line);
  bool detect_fixed();
  static Section section_of_word(std::string_view word);
  // Fills fields_ from a fixed-layout data line as the free reading would list them.
  void split_fixed(std::string_view line);
  void enter(Section s);
  double number(std::string_view token) const;
  double finite_number(std::string_view token, const char* what) const;
  double bound_number(std::string_view token) const;

  void header(std::string_view line);
  void data();
  void objsense(std::string_view word);
  void row_entry();
  void column_entry();
  void rhs_entry();
  void range_entry();
  void bound_entry();
  void quad_entry();
  void sos_entry(std::string_view line);
  void finish();

  int row_of(std::string_view name) const;
  int column_of(std::string_view name) const;
  // Where the (row, value) pairs of an RHS or RANGES line start; false: skip the line.
  bool find_pairs(SetFilter& sets, size_t* first);

  std::string_view text_;
  const std::string& filename_;
  MpsOptions options_;
  ReadLimit limit_;
  bool fixed_ = false;
  long line_no_ = 0;
  std::vector<std::string_view> fields_;
  bool too_many_fields_ = false;
  bool fixed_has_set_ = false;          // fixed BOUNDS line: field 2 (the set name) is given
  std::string_view last_column_;        // fixed COLUMNS: the column a blank name continues
  std::vector<Section> seen_sections_;

  Model model_;
  Section section_ = Section::kNone;
  bool seen_rows_ = false;
  bool have_objective_ = false;
  bool in_integer_block_ = false;
  int qc_row_ = -1;
  SosSet* sos_ = nullptr;  // the set that SOS member lines add to
  std::unordered_map<std::string, int> sos_names_;
  SetFilter rhs_sets_, range_sets_, bound_sets_;

  // Names point into text_, which outlives the reader.
  std::unordered_map<std::string_view, int> rows_;
  std::unordered_map<std::string_view, int> cols_;
  std::vector<RowInfo> row_info_;
  std::vector<VarInfo> var_info_;
};

// Binary data is refused up front: NUL and other control characters never occur in MPS.
void MpsReader::check_bytes(std::string_view line) const {
  for (char ch : line) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
      fail("binary data (control character " + std::to_string(int(c)) + ") in MPS text");
  }
}

// Splits into at most kMaxFields white-space separated fields; returns false when blank.
bool MpsReader::split(std::string_view line) {
  fields_.clear();
  too_many_fields_ = false;
  size_t k = 0;
  while (k < line.size()) {
    while (k < line.size() && is_space(line[k])) ++k;
    if (k == line.size()) break;
    if (fields_.size() == kMaxFields) {
      too_many_fields_ = true;
      break;
    }
    size_t start = k;
    while (k < line.size() && !is_space(line[k])) ++k;
    fields_.push_back(line.substr(start, k - start));
  }
  return !fields_.empty();
}

// Parses the whole token as a double. Overflow is an error; underflow gives the tiny value
// (or zero) that strtod rounds to, which is what a writer of such a number meant.
double MpsReader::number(std::string_view token) const {
  std::string_view digits = token;
  // from_chars takes no leading '+', which MPS writers do emit.
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-' && digits[1] != '+')
    digits.remove_prefix(1);
  double value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ptr != digits.data() + digits.size() || (ec != std::errc() &&
                                               ec != std::errc::result_out_of_range))
    fail("expected a number, found " + quote(token));
  if (ec == std::errc::result_out_of_range) {
    std::string copy(digits);
    errno = 0;
    value = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(value)) fail("number out of range: " + quote(token));
  }
  if (std::isnan(value)) fail("NaN is not a valid number: " + quote(token));
  return value;
}

// A matrix or objective coefficient: infinity is meaningless there.
double MpsReader::finite_number(std::string_view token, const char* what) const {
  double v = number(token);
  if (std::isinf(v)) fail(std::string(what) + " is infinite: " + quote(token));
  return v;
}

// A value in RHS, RANGES or BOUNDS, where 1e30 and beyond mean infinity.
double MpsReader::bound_number(std::string_view token) const {
  double v = number(token);
  if (v >= kMpsInfinity) return kInf;
  if (v <= -kMpsInfinity) return -kInf;
  return v;
}

int MpsReader::row_of(std::string_view name) const {
  auto it = rows_.find(name);
  if (it == rows_.end()) fail("unknown row " + quote(name));
  return it->second;
}

int MpsReader::column_of(std::string_view name) const {
  auto it = cols_.find(name);
  if (it == cols_.end()) fail("unknown column " + quote(name));
  return it->second;
}

Section MpsReader::section_of_word(std::string_view word) {
  struct Entry { const char* word; Section section; };
  static constexpr Entry kWords[] = {
      {"NAME", Section::kName},       {"OBJSENSE", Section::kObjSense}, {"ROWS", Section::kRows},
      {"COLUMNS", Section::kColumns}, {"RHS", Section::kRhs},           {"RANGES", Section::kRanges},
      {"BOUNDS", Section::kBounds},   {"SOS", Section::kSos},           {"QUADOBJ", Section::kQuadObj},
      {"QMATRIX", Section::kQMatrix}, {"QCMATRIX", Section::kQcMatrix}, {"ENDATA", Section::kEndData}};
  for (const Entry& e : kWords)
    if (iequals(word, e.word)) return e.section;
  return Section::kNone;
}

// A file is fixed when every data line fits the fixed columns and at least one reads
// differently from its free reading. Lines of the OBJSENSE and SOS sections are read free in
// both layouts (as COIN-OR does) and do not count.
bool MpsReader::detect_fixed() {
  Section section = Section::kNone;
  bool differs = false;
  size_t pos = 0;
  std::string_view line;
  while (next_line(text_, pos, &line)) {
    limit_.step(filename_);
    if (line.empty() || line[0] == '*' || trim(line).empty()) continue;
    if (!is_space(line[0])) {
      size_t w = 0;
      while (w < line.size() && !is_space(line[w])) ++w;
      section = section_of_word(line.substr(0, w));
      if (section == Section::kEndData) break;
      continue;
    }
    if (section == Section::kObjSense || section == Section::kSos || section == Section::kNone) continue;
    std::string_view f[6];
    bool comment = false;
    if (!fixed_fields(line, f, &comment)) return false;
    if (differs) continue;
    if (comment) differs = true;
    for (auto& field : f)
      if (field.find(' ') != std::string_view::npos) differs = true;
    // A blank column name in COLUMNS (other fields given) is a continuation.
    if (section == Section::kColumns && f[1].empty() && !f[2].empty()) differs = true;
  }
  return differs;
}

void MpsReader::split_fixed(std::string_view line) {
  std::string_view f[6];
  bool comment = false;
  if (!fixed_fields(line, f, &comment))
    fail("a fixed-format line must keep to columns 2-3, 5-12, 15-22, 25-36, 40-47 and 50-61");
  fields_.clear();
  too_many_fields_ = false;
  fixed_has_set_ = false;
  auto push = [&](std::string_view v) { fields_.push_back(v); };
  switch (section_) {
    case Section::kRows:
      if (!f[0].empty()) push(f[0]);
      if (!f[1].empty()) push(f[1]);
      if (!f[2].empty()) fail("a ROWS line is a type and a name (columns 2-3 and 5-12)");
      return;
    case Section::kColumns: {
      if (f[2] == "'MARKER'") {
        push(f[1]);
        push(f[2]);
        if (!f[4].empty()) push(f[4]);
        return;
      }
      if (!f[0].empty()) fail("field 1 (columns 2-3) of a COLUMNS line must be blank");
      std::string_view col = f[1];
      if (col.empty()) {
        if (last_column_.empty()) fail("a blank column name continues no column");
        col = last_column_;
      }
      last_column_ = col;
      push(col);
      for (int k = 2; k < 6; ++k) {
        if (f[k].empty() && k + 1 < 6 && !f[k + 1].empty()) fail("field " + std::to_string(k + 1) + " is blank");
        if (!f[k].empty()) push(f[k]);
      }
      return;
    }
    case Section::kRhs:
    case Section::kRanges:
      if (!f[0].empty()) fail("field 1 (columns 2-3) of an RHS or RANGES line must be blank");
      if (!f[1].empty()) push(f[1]);
      for (int k = 2; k < 6; ++k) {
        if (f[k].empty() && k + 1 < 6 && !f[k + 1].empty()) fail("field " + std::to_string(k + 1) + " is blank");
        if (!f[k].empty()) push(f[k]);
      }
      if (f[1].empty() && fields_.size() % 2 == 1) fail("expected row value [row value]");
      if (!f[1].empty() && fields_.size() % 2 == 0) fail("expected set row value [row value]");
      return;
    case Section::kBounds:
      push(f[0]);
      if (f[0].empty()) fail("a BOUNDS line needs a bound type in columns 2-3");
      fixed_has_set_ = !f[1].empty();
      if (fixed_has_set_) push(f[1]);
      if (f[2].empty()) fail("a BOUNDS line needs a column name in columns 15-22");
      push(f[2]);
      if (!f[3].empty()) push(f[3]);
      if (!f[4].empty() || !f[5].empty()) fail("a BOUNDS line has no fields after the value");
      return;
    default:  // QUADOBJ, QMATRIX, QCMATRIX: column, column, value
      if (!f[0].empty()) fail("field 1 (columns 2-3) must be blank here");
      for (int k = 1; k < 6; ++k)
        if (!f[k].empty()) push(f[k]);
      return;
  }
}

Model MpsReader::read() {
  fixed_ = options_.format == MpsFormat::kFixed ||
           (options_.format == MpsFormat::kAuto && detect_fixed());
  bool any_data = false;
  size_t pos = 0;
  std::string_view line;
  while (next_line(text_, pos, &line)) {
    ++line_no_;
    limit_.step(filename_);
    check_bytes(line);
    if (line.empty() || line[0] == '*') continue;
    if (!split(line)) continue;
    any_data = true;
    if (!is_space(line[0])) {
      header(line);
      if (section_ == Section::kEndData) break;
    } else if (section_ == Section::kSos) {
      if (too_many_fields_) fail("too many fields on one line");
      sos_entry(line);
    } else {
      if (fixed_ && section_ != Section::kObjSense && section_ != Section::kNone &&
          section_ != Section::kName && section_ != Section::kEndData)
        split_fixed(line);
      data();
    }
  }
  if (!any_data) {
    line_no_ = 1;
    fail("empty file: no MPS data");
  }
  if (section_ != Section::kEndData) fail("missing ENDATA");  // named at the last line
  if (!seen_rows_) fail("no ROWS section");
  finish();
  return std::move(model_);
}

void MpsReader::header(std::string_view line) {
  std::string_view word = fields_[0];
  in_integer_block_ = false;
  // Some writers put the sense under OBJSENSE without indenting it.
  if (section_ == Section::kObjSense && fields_.size() == 1 && is_sense_word(word)) {
    objsense(word);
    return;
  }
  Section next = section_of_word(word);
  if (next == Section::kNone) {
    if (iequals(word, "CSECTION"))
      fail("conic sections (CSECTION) are not supported: no trex back end solves cone constraints");
    fail("unknown section " + quote(word));
  }
  enter(next);
  if (next == Section::kName) {
    model_.name = std::string(trim(line.substr(word.size())));
  } else if (next == Section::kObjSense) {
    if (fields_.size() > 1) objsense(fields_[1]);  // else the sense is on the next line
  } else if (next == Section::kRows) {
    seen_rows_ = true;
  } else if (next == Section::kQcMatrix) {
    if (fields_.size() < 2) fail("QCMATRIX needs a row name");
    int r = row_of(fields_[1]);
    if (r < 0) fail("QCMATRIX names the free row " + quote(fields_[1]));
    qc_row_ = r;
  }
}

// Sections come in the order of rank_of, each once (QCMATRIX once per row).
void MpsReader::enter(Section next) {
  static const char* kNames[] = {"", "NAME", "OBJSENSE", "ROWS", "COLUMNS", "RHS", "RANGES",
                                 "BOUNDS", "SOS", "QUADOBJ", "QMATRIX", "QCMATRIX", "ENDATA"};
  const char* name = kNames[int(next)];
  if (next != Section::kQcMatrix &&
      std::find(seen_sections_.begin(), seen_sections_.end(), next) != seen_sections_.end())
    fail(std::string("second ") + name + " section");
  if (rank_of(next) < rank_of(section_))
    fail(std::string(name) + " section out of order: it must come before " + kNames[int(section_)]);
  if (next != Section::kName && next != Section::kObjSense && next != Section::kRows &&
      next != Section::kEndData && !seen_rows_)
    fail(std::string(name) + " section out of order: it must come after ROWS");
  seen_sections_.push_back(next);
  section_ = next;
  sos_ = nullptr;
  last_column_ = {};
}

void MpsReader::objsense(std::string_view word) {
  if (iequals(word, "MAX") || iequals(word, "MAXIMIZE") || iequals(word, "MAXIMISE")) {
    model_.sense = Sense::kMaximize;
  } else if (iequals(word, "MIN") || iequals(word, "MINIMIZE") || iequals(word, "MINIMISE")) {
    model_.sense = Sense::kMinimize;
  } else {
    fail("unknown objective sense " + quote(word) + " (expected MIN or MAX)");
  }
}

void MpsReader::data() {
  if (section_ == Section::kNone || section_ == Section::kName)
    fail("data line outside any section");
  if (too_many_fields_) fail("too many fields on one line");
  switch (section_) {
    case Section::kNone:
    case Section::kName:
    case Section::kEndData: return;
    case Section::kObjSense:
      if (fields_.size() != 1) fail("OBJSENSE takes one word, MIN or MAX");
      objsense(fields_[0]);
      return;
    case Section::kRows: return row_entry();
    case Section::kColumns: return column_entry();
    case Section::kRhs: return rhs_entry();
    case Section::kRanges: return range_entry();
    case Section::kBounds: return bound_entry();
    case Section::kQuadObj:
    case Section::kQMatrix:
    case Section::kQcMatrix: return quad_entry();
    case Section::kSos: return;  // read by sos_entry
  }
}

void MpsReader::row_entry() {
  if (fields_.size() != 2) fail("a ROWS line is a type and a name");
  std::string_view type = fields_[0], name = fields_[1];
  if (type.size() != 1) fail("unknown row type " + quote(type));
  char t = upper_ascii(type[0]);
  if (t != 'N' && t != 'L' && t != 'G' && t != 'E') fail("unknown row type " + quote(type));
  if (rows_.count(name)) fail("duplicate row name " + quote(name));
  if (t == 'N') {
    rows_.emplace(name, have_objective_ ? kDroppedRow : kObjectiveRow);
    if (!have_objective_) model_.objective_name = std::string(name);
    have_objective_ = true;
    return;
  }
  double lower = t == 'L' ? -kInf : 0, upper = t == 'G' ? kInf : 0;
  int r = model_.add_row(std::string(name), {}, lower, upper);
  rows_.emplace(name, r);
  row_info_.push_back(RowInfo{t, 0, 0, false, line_no_});
}

void MpsReader::column_entry() {
  if (fields_.size() >= 2 && fields_[1] == "'MARKER'") {
    if (fields_.size() != 3) fail("a MARKER line is a name, 'MARKER' and 'INTORG' or 'INTEND'");
    if (fields_[2] == "'INTORG'") {
      in_integer_block_ = true;
    } else if (fields_[2] == "'INTEND'") {
      in_integer_block_ = false;
    } else {
      fail("unknown marker " + quote(fields_[2]));
    }
    return;
  }
  if (fields_.size() != 3 && fields_.size() != 5)
    fail("a COLUMNS line is a column name and one or two (row, value) pairs");
  std::string_view col = fields_[0];
  auto [it, added] = cols_.emplace(col, model_.num_vars());
  int j = it->second;
  if (added) {
    model_.add_var(std::string(col));
    var_info_.emplace_back();
  }
  // A marker-integer column that no BOUNDS line names gets [0, 1] at the end (see finish()).
  if (in_integer_block_ && model_.var(j).type == VarType::kContinuous) {
    model_.var(j).type = VarType::kInteger;
    var_info_[size_t(j)].from_marker = true;
  }
  for (size_t k = 1; k + 1 < fields_.size(); k += 2) {
    int r = row_of(fields_[k]);
    double v = finite_number(fields_[k + 1], "coefficient");
    if (r == kObjectiveRow) {
      model_.var(j).cost += v;
    } else if (r >= 0) {
      model_.row(r).terms.push_back(Term{j, v});
    }
  }
}

// RHS and RANGES lines are "[set] row value [row value]": an odd field count has a set name.
bool MpsReader::find_pairs(SetFilter& sets, size_t* first) {
  if (fields_.size() < 2 || fields_.size() > 5)
    fail("expected [set name] row value [row value]");
  *first = fields_.size() % 2;
  return *first == 0 || sets.accepts(fields_[0]);
}

void MpsReader::rhs_entry() {
  size_t k;
  if (!find_pairs(rhs_sets_, &k)) return;
  for (; k + 1 < fields_.size(); k += 2) {
    int r = row_of(fields_[k]);
    double v = bound_number(fields_[k + 1]);
    if (r == kObjectiveRow) {
      if (std::isinf(v)) fail("objective constant is infinite: " + quote(fields_[k + 1]));
      model_.objective_constant = -v;
    } else if (r >= 0) {
      row_info_[size_t(r)].rhs = v;
      row_info_[size_t(r)].line = line_no_;
    }
  }
}

void MpsReader::range_entry() {
  size_t k;
  if (!find_pairs(range_sets_, &k)) return;
  for (; k + 1 < fields_.size(); k += 2) {
    int r = row_of(fields_[k]);
    double v = bound_number(fields_[k + 1]);
    if (r < 0) continue;  // a range on a free row changes nothing
    RowInfo& info = row_info_[size_t(r)];
    info.range = v;
    info.has_range = true;
    info.line = line_no_;
  }
}

void MpsReader::bound_entry() {
  std::string_view type = fields_[0];
  std::string t = type.size() == 2 ? std::string{upper_ascii(type[0]), upper_ascii(type[1])} : "";
  bool needs_value = t == "UP" || t == "LO" || t == "FX" || t == "LI" || t == "UI";
  bool optional_value = t == "FR" || t == "MI" || t == "PL" || t == "BV" || t == "SC";
  if (!needs_value && !optional_value) fail("unknown bound type " + quote(type));

  // Fields after the type: [set] column [value]. The set name is optional, so a
  // three-field tail is "set column value" and a one-field tail is "column"; with two fields
  // a value is required for needs_value types, else the second field decides: a known
  // column makes it "set column".
  size_t n = fields_.size() - 1;
  bool has_set = false, has_value = false;
  if (fixed_) {
    has_set = fixed_has_set_;
    has_value = n == (has_set ? 3u : 2u);
    if (needs_value && !has_value) fail("bound type " + quote(type) + " needs a value in columns 25-36");
  } else if (n == 3) {
    has_set = has_value = true;
  } else if (n == 2) {
    if (needs_value || !cols_.count(fields_[2])) {
      has_value = true;
    } else {
      has_set = true;
    }
  } else if (!(n == 1 && !needs_value)) {
    fail("expected TYPE [set name] column" + std::string(needs_value ? " value" : ""));
  }
  if (has_set && !bound_sets_.accepts(fields_[1])) return;
  std::string_view col = fields_[has_set ? 2 : 1];
  int j = column_of(col);
  double v = has_value ? bound_number(fields_[n]) : 0;
  Variable& var = model_.var(j);
  VarInfo& info = var_info_[size_t(j)];
  info.bound_line = line_no_;
  auto set_lower = [&](double lo) {
    if (lo == kInf) fail("lower bound of " + quote(col) + " is +infinity");
    var.lower = lo;
    info.lower_set = true;
  };
  auto set_upper = [&](double up) {
    if (up == -kInf) fail("upper bound of " + quote(col) + " is -infinity");
    var.upper = up;
    // As CPLEX does: a negative upper bound with the default lower bound 0 would make the
    // variable infeasible; the writer of such a file meant a free lower bound.
    if (up < 0 && !info.lower_set) var.lower = -kInf;
  };
  if (t == "UP" || t == "UI") {
    set_upper(v);
  } else if (t == "LO" || t == "LI") {
    set_lower(v);
  } else if (t == "FX") {
    if (std::isinf(v)) fail("fixed bound of " + quote(col) + " is infinite");
    set_lower(v);
    set_upper(v);
  } else if (t == "FR") {
    set_lower(-kInf);
    set_upper(kInf);
  } else if (t == "MI") {
    set_lower(-kInf);
  } else if (t == "PL") {
    set_upper(kInf);
  } else if (t == "BV") {
    var.type = VarType::kBinary;
    set_lower(0);
    set_upper(1);
  } else if (t == "SC") {
    if (var.type != VarType::kContinuous)
      fail("SC (semi-continuous) bound on the integer column " + quote(col));
    // As COIN-OR: no value or 0 means no upper bound.
    var.upper = v == 0 ? kInf : v;
    if (var.upper == -kInf || var.upper < 0) fail("SC bound of " + quote(col) + " is negative");
    var.semicontinuous = true;
  }
  if (var.semicontinuous && (t == "BV" || t == "LI" || t == "UI"))
    fail("integer bound " + quote(type) + " on the semi-continuous column " + quote(col));
  if ((t == "LI" || t == "UI") && var.type == VarType::kContinuous) var.type = VarType::kInteger;
}

// QUADOBJ and QMATRIX give 0.5 x'Qx (QUADOBJ one triangle, QMATRIX both); QCMATRIX gives
// x'Qx with both triangles. Model terms are the plain coefficient of x_i x_j.
void MpsReader::quad_entry() {
  if (fields_.size() != 3) fail("a quadratic entry is two column names and a value");
  int i = column_of(fields_[0]), j = column_of(fields_[1]);
  double v = finite_number(fields_[2], "quadratic coefficient");
  if (section_ == Section::kQuadObj) {
    model_.add_objective_quad(i, j, i == j ? 0.5 * v : v);
  } else if (section_ == Section::kQMatrix) {
    model_.add_objective_quad(i, j, 0.5 * v);
  } else {
    model_.row(qc_row_).quad.push_back(QuadTerm{std::min(i, j), std::max(i, j), v});
  }
}

// " S1 [SOS] [name] [priority]" starts a set; "[set] column [weight]" adds a member.
void MpsReader::sos_entry(std::string_view line) {
  bool header = line.size() >= 3 && line[0] == ' ' && (upper_ascii(line[1]) == 'S') &&
                (line[2] == '1' || line[2] == '2') && (line.size() == 3 || is_space(line[3]));
  if (header) {
    SosSet set;
    set.type = line[2] - '0';
    size_t k = 1;
    if (k < fields_.size() && iequals(fields_[k], "SOS")) ++k;
    if (k < fields_.size()) set.name = std::string(fields_[k++]);
    if (k < fields_.size()) {
      double p = finite_number(fields_[k++], "SOS priority");
      if (p != std::floor(p) || std::fabs(p) > 1e9) fail("SOS priority must be an integer");
      set.priority = int(p);
    }
    if (k < fields_.size()) fail("an SOS header is S1 or S2, [SOS], [name], [priority]");
    if (set.name.empty()) set.name = "sos" + std::to_string(model_.sos.size() + 1);
    if (sos_names_.count(set.name)) fail("duplicate SOS set name " + quote(set.name));
    sos_names_.emplace(set.name, int(model_.sos.size()));
    model_.sos.push_back(std::move(set));
    sos_ = &model_.sos.back();
    return;
  }
  if (!sos_) fail("SOS member line before an S1 or S2 header");
  // Fixed layout: "set column weight" in fields 2-4, or COIN-OR's "column (blank) weight".
  std::string_view f[6];
  bool comment = false;
  if (fixed_ && fixed_fields(line, f, &comment) && f[0].empty() && !f[1].empty()) {
    fields_.clear();
    fields_.push_back(f[1]);
    if (!f[2].empty()) fields_.push_back(f[2]);
    if (!f[3].empty()) fields_.push_back(f[3]);
  }
  std::string_view col, weight;
  if (fields_.size() == 1) {
    col = fields_[0];
  } else if (fields_.size() == 2) {
    if (cols_.count(fields_[0])) {
      col = fields_[0];
      weight = fields_[1];
    } else if (fields_[0] == sos_->name) {
      col = fields_[1];
    } else {
      fail("SOS set " + quote(sos_->name) + " names unknown column " + quote(fields_[0]));
    }
  } else if (fields_.size() == 3) {
    if (fields_[0] != sos_->name)
      fail("SOS member line names set " + quote(fields_[0]) + ", not " + quote(sos_->name));
    col = fields_[1];
    weight = fields_[2];
  } else {
    fail("an SOS member line is [set] column [weight]");
  }
  auto it = cols_.find(col);
  if (it == cols_.end()) fail("SOS set " + quote(sos_->name) + " names unknown column " + quote(col));
  double w = weight.empty() ? double(sos_->vars.size() + 1) : finite_number(weight, "SOS weight");
  for (size_t k = 0; k < sos_->vars.size(); ++k) {
    if (sos_->vars[k] == it->second) fail("SOS set " + quote(sos_->name) + " names " + quote(col) + " twice");
    if (sos_->weights[k] == w) fail("SOS set " + quote(sos_->name) + " repeats the weight " + quote(weight));
  }
  sos_->vars.push_back(it->second);
  sos_->weights.push_back(w);
}

void MpsReader::finish() {
  for (int r = 0; r < model_.num_rows(); ++r) {
    const RowInfo& info = row_info_[size_t(r)];
    double lower = info.rhs, upper = info.rhs;
    double range = std::fabs(info.range);
    if (info.type == 'L') lower = info.has_range ? info.rhs - range : -kInf;
    if (info.type == 'G') upper = info.has_range ? info.rhs + range : kInf;
    if (info.type == 'E' && info.has_range) {
      if (info.range > 0) upper = info.rhs + range;
      if (info.range < 0) lower = info.rhs - range;
    }
    if (!(lower < kInf) || !(upper > -kInf) || !(lower <= upper))
      fail_at(info.line, "row " + quote(model_.row(r).name) + " gets an impossible range");
    model_.row(r).lower = lower;
    model_.row(r).upper = upper;
  }
  for (int j = 0; j < model_.num_vars(); ++j) {
    Variable& v = model_.var(j);
    if (v.lower > v.upper)
      fail_at(var_info_[size_t(j)].bound_line,
              "bounds of " + quote(v.name) + " cross: lower > upper");
    // A later UP/LO on a BV column can widen it; a Model binary stays within [0, 1].
    if (v.type == VarType::kBinary && (v.lower < 0 || v.upper > 1)) v.type = VarType::kInteger;
    const VarInfo& info = var_info_[size_t(j)];
    if (info.from_marker && info.bound_line == 0 && !options_.integer_markers_unbounded) v.upper = 1;
    if (v.semicontinuous && v.upper == kInf)
      fail_at(info.bound_line, "semi-continuous column " + quote(v.name) + " needs a finite SC bound");
    if (v.semicontinuous && v.lower < 0)
      fail_at(info.bound_line, "semi-continuous column " + quote(v.name) + " has a negative lower bound");
  }
  model_.sos.erase(std::remove_if(model_.sos.begin(), model_.sos.end(),
                                  [](const SosSet& s) { return s.vars.empty(); }),
                   model_.sos.end());
  model_.normalize();
}

}  // namespace

MpsFormat parse_mps_format(const std::string& text, const std::string& what) {
  if (text == "auto") return MpsFormat::kAuto;
  if (text == "free") return MpsFormat::kFree;
  if (text == "fixed") return MpsFormat::kFixed;
  throw InputError::field(what, "expected auto, free or fixed, not '" + text + "'");
}

Model read_mps(std::string_view text, const std::string& filename, const MpsOptions& options,
               ReadLimit limit) {
  return MpsReader(text, filename, options, limit).read();
}

}  // namespace trex::lp
