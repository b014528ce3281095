#include "trex/train/dataset.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace fs = std::filesystem;

namespace trex::train {
namespace {

bool has_glob(const std::string& p) { return p.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> regular_files_below(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string p = it->path().string();
    // ".jsonl" also takes zstd-compressed ".jsonl.zst" parts (trex data writes those by default).
    if (ext.empty() || it->path().extension() == ext ||
        (is_zstd_path(p) && it->path().stem().extension() == ext))
      out.push_back(p);
  }
  if (ec) throw InputError(dir, 0, "cannot list directory: " + ec.message());
  return out;
}

const char* view_dir(SourceKind k) { return k == SourceKind::kCpt ? "cpt" : "sft"; }

// The string field `key` of a JSON object, or an error naming file:line.
const std::string& string_field(const nlohmann::json& j, const char* key, const std::string& file, long line,
                                const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) throw InputError(file, line, where + "no \"" + key + "\" field");
  if (!it->is_string()) throw InputError(file, line, where + "\"" + key + "\" must be a string");
  return it->get_ref<const std::string&>();
}

}  // namespace

const char* to_string(SourceKind k) {
  switch (k) {
    case SourceKind::kText: return "text";
    case SourceKind::kCpt: return "cpt";
    case SourceKind::kSft: return "sft";
  }
  return "?";
}

std::vector<std::string> source_files(const SourceSpec& spec) {
  std::vector<std::string> files;
  const std::string field = spec.where() + ".path";
  if (spec.path.empty()) throw InputError::field(field, "must not be empty");
  if (has_glob(spec.path)) {
    glob_t g{};
    int rc = ::glob(spec.path.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::error_code ec;
        if (fs::is_regular_file(g.gl_pathv[i], ec)) files.emplace_back(g.gl_pathv[i]);
        else if (fs::is_directory(g.gl_pathv[i], ec)) {
          auto below = regular_files_below(g.gl_pathv[i], spec.kind == SourceKind::kText ? "" : ".jsonl");
          files.insert(files.end(), below.begin(), below.end());
        }
      }
    globfree(&g);
    if (files.empty()) throw InputError::field(field, "no file matches " + spec.path);
  } else if (fs::is_directory(spec.path)) {
    std::string dir = spec.path;
    if (spec.kind != SourceKind::kText && fs::is_directory(fs::path(dir) / view_dir(spec.kind)))
      dir = (fs::path(dir) / view_dir(spec.kind)).string();  // a `trex data` output directory
    files = regular_files_below(dir, spec.kind == SourceKind::kText ? "" : ".jsonl");
    if (files.empty()) throw InputError::field(field, "no input file under " + dir);
  } else if (fs::exists(spec.path)) {
    files.push_back(spec.path);
  } else {
    throw InputError::field(field, spec.path + " does not exist");
  }
  std::sort(files.begin(), files.end());
  return files;
}

Source Source::load(const SourceSpec& spec) {
  Source s;
  s.spec_ = spec;
  for (const std::string& file : source_files(spec)) {
    std::string data = read_text_file(file);  // plain, or decompressed when it ends in .zst
    s.bytes_ += int64_t(data.size());
    if (spec.kind == SourceKind::kText) {
      if (data.find('\0') != std::string::npos) {
        ++s.skipped_files_;
        continue;
      }
      if (data.find_first_not_of(" \t\r\n") == std::string::npos) continue;
      s.texts_.push_back(std::move(data));
      continue;
    }
    long line_no = 0;
    size_t pos = 0;
    while (pos < data.size()) {
      size_t nl = data.find('\n', pos);
      if (nl == std::string::npos) nl = data.size();
      std::string_view line(data.data() + pos, nl - pos);
      pos = nl + 1;
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) throw InputError(file, line_no, "not a JSON object (malformed JSON)");
      if (!j.is_object()) throw InputError(file, line_no, "not a JSON object");
      if (spec.kind == SourceKind::kCpt) {
        const std::string& text = string_field(j, "text", file, line_no, "");
        if (!text.empty()) s.texts_.push_back(text);
        continue;
      }
      auto it = j.find("messages");
      if (it == j.end() || !it->is_array() || it->empty())
        throw InputError(file, line_no, "\"messages\" must be a non-empty array");
      std::vector<ChatMessage> chat;
      bool has_assistant = false;
      for (size_t m = 0; m < it->size(); ++m) {
        const nlohmann::json& msg = (*it)[m];
        std::string where = "messages[" + std::to_string(m) + "]: ";
        if (!msg.is_object()) throw InputError(file, line_no, where + "must be an object");
        ChatMessage cm;
        const std::string& role = string_field(msg, "role", file, line_no, where);
        if (!parse_role(role, &cm.role))
          throw InputError(file, line_no, where + "unknown role \"" + role + "\" (system, user or assistant)");
        cm.content = string_field(msg, "content", file, line_no, where);
        has_assistant |= cm.role == Role::kAssistant;
        chat.push_back(std::move(cm));
      }
      if (!has_assistant) throw InputError(file, line_no, "no assistant message (nothing for the SFT loss)");
      s.chats_.push_back(std::move(chat));
    }
  }
  if (s.size() == 0) throw InputError::field(spec.where() + ".path", "no document in " + spec.path);
  return s;
}

size_t Source::size() const { return spec_.kind == SourceKind::kSft ? chats_.size() : texts_.size(); }

std::string Source::text(size_t i) const {
  if (spec_.kind != SourceKind::kSft) return texts_.at(i);
  std::string out;
  for (const ChatMessage& m : chats_.at(i)) out += m.content + "\n";
  return out;
}

TokenizedDoc Source::tokenize(size_t i, const Tokenizer& tok) const {
  if (spec_.kind == SourceKind::kSft) {
    TokenizedDoc d = render_chat(chats_.at(i), tok);
    if (spec_.count_all)
      for (size_t j = 1; j < d.loss.size(); ++j) d.loss[j] = 1;
    return d;
  }
  return render_text(texts_.at(i), tok);
}

}  // namespace trex::train
