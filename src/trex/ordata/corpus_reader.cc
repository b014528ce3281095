#include "trex/ordata/corpus_reader.h"

#include <algorithm>
#include <filesystem>

#include "nlohmann/json.hpp"
#include "trex/ordata/corpus_run.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace trex::ordata {

std::vector<CorpusSample> read_corpus_samples(const std::string& dir, long limit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir + "/data", ec)) throw InputError(dir, 0, "not a corpus directory (no data/ folder)");
  std::vector<std::string> parts;
  for (const auto& e : fs::directory_iterator(dir + "/data"))
    if (is_corpus_part(e.path().filename().string())) parts.push_back(e.path().string());
  std::sort(parts.begin(), parts.end());
  if (parts.empty()) throw InputError(dir + "/data", 0, "no corpus parts");
  std::vector<CorpusSample> rows;
  for (const std::string& part : parts) {
    const std::string text = read_text_file(part);
    size_t pos = 0;
    for (long line = 1; pos < text.size(); ++line) {
      if (limit > 0 && long(rows.size()) >= limit) return rows;
      const size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) throw InputError(part, line, "truncated line (no newline)");
      const nlohmann::json j =
          nlohmann::json::parse(text.begin() + long(pos), text.begin() + long(nl), nullptr, false);
      pos = nl + 1;
      if (j.is_discarded()) throw InputError(part, line, "not JSON");
      try {
        CorpusSample s;
        s.id = j.at("id").get<std::string>();
        s.family = j.at("family").get<std::string>();
        s.statement = j.at("statement").get<std::string>();
        s.lp = j.at("formulations").at("lp").get<std::string>();
        s.status = j.at("answer").at("status").get<std::string>();
        if (j["answer"].at("objective").is_number()) s.objective = j["answer"]["objective"].get<double>();
        s.file = part;
        s.line = line;
        rows.push_back(std::move(s));
      } catch (const nlohmann::json::exception& e) {
        throw InputError(part, line, std::string("not a corpus sample: ") + e.what());
      }
    }
  }
  return rows;
}

}  // namespace trex::ordata
