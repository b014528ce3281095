#include "trex/train/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace fs = std::filesystem;

namespace trex::train {

std::string checkpoint_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

namespace {

// The checkpoints of a run directory, oldest first.
std::vector<fs::path> list_checkpoints(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("step-", 0) == 0 && fs::exists(it->path() / "state.json")) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string checkpoint_tmp_dir(const std::string& run_dir, int64_t step, const std::string& tmp_tag) {
  return (fs::path(run_dir) / "checkpoints" / (".tmp-" + checkpoint_name(step) + "-" + tmp_tag)).string();
}

std::string write_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                             optim::Optimizer& optimizer, const nlohmann::json& state, const Tokenizer& tok,
                             int64_t keep_last) {
  return write_checkpoint(
      run_dir, step, model,
      [&](const std::string& tmp) { optimizer.save_state((fs::path(tmp) / "optimizer.safetensors").string()); },
      std::to_string(::getpid()), state, tok, keep_last);
}

std::string write_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                             const std::function<void(const std::string&)>& write_optimizer,
                             const std::string& tmp_tag, const nlohmann::json& state, const Tokenizer& tok,
                             int64_t keep_last) {
  fs::path root = fs::path(run_dir) / "checkpoints";
  fs::create_directories(root);
  std::string name = checkpoint_name(step);
  fs::path tmp = checkpoint_tmp_dir(run_dir, step, tmp_tag);
  fs::path final_dir = root / name;
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    model.save((tmp / "model.safetensors").string(), {{"step", std::to_string(step)}});
    write_optimizer(tmp.string());
    tok.save((tmp / "tokenizer.model").string());
    write_file_atomic((tmp / "state.json").string(), state.dump(2) + "\n");
  } catch (...) {
    // A full disk or a failed optimizer read: leave no partial checkpoint behind (the last
    // published one stays the one to resume from).
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  // A checkpoint of the same step from an earlier attempt (a run resumed from before it) is
  // replaced; rename cannot replace a non-empty directory, so it goes first.
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) throw InputError(final_dir.string(), 0, "cannot publish checkpoint: " + ec.message());
  std::vector<fs::path> all = list_checkpoints(root);
  for (size_t i = 0; i + size_t(keep_last) < all.size(); ++i) fs::remove_all(all[i], ec);
  return final_dir.string();
}

std::string optimizer_shard_name(int rank, int ranks) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "optimizer-rank-%05d-of-%05d.safetensors", rank, ranks);
  return buf;
}

void write_optimizer_index(const std::string& checkpoint_dir, int64_t params,
                           const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranges) {
  nlohmann::json shards = nlohmann::json::array();
  const int ranks = int(ranges.size());
  for (int q = 0; q < ranks; ++q) {
    int64_t at = 0;
    for (const auto& [begin, end] : ranges[size_t(q)]) {
      shards.push_back({{"file", optimizer_shard_name(q, ranks)}, {"offset", begin}, {"count", end - begin}, {"at", at}});
      at += end - begin;
    }
  }
  nlohmann::json j = {{"format", "trex.optim.shards"}, {"version", 1}, {"params", params}, {"shards", shards}};
  write_file_atomic((fs::path(checkpoint_dir) / "optimizer.index.json").string(), j.dump(2) + "\n");
}

std::vector<optim::StatePiece> optimizer_state_pieces(const std::string& checkpoint_dir) {
  const fs::path index = fs::path(checkpoint_dir) / "optimizer.index.json";
  if (!fs::exists(index)) return {{(fs::path(checkpoint_dir) / "optimizer.safetensors").string(), 0}};
  nlohmann::json j = nlohmann::json::parse(read_file(index.string()), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "trex.optim.shards" || !j.contains("shards") ||
      !j["shards"].is_array())
    throw InputError(index.string(), 0, "not a trex optimizer shard index (format 'trex.optim.shards' with 'shards')");
  std::vector<optim::StatePiece> out;
  for (size_t i = 0; i < j["shards"].size(); ++i) {
    const nlohmann::json& s = j["shards"][i];
    auto count_at = [&](const char* key) {
      return s.is_object() && s.contains(key) && s[key].is_number_integer() && s[key].get<int64_t>() >= 0;
    };
    if (!s.is_object() || !s.contains("file") || !s["file"].is_string() || !count_at("offset") ||
        (s.contains("at") && !count_at("at")) || (s.contains("at") && !count_at("count")) ||
        fs::path(s["file"].get<std::string>()).filename() != s["file"].get<std::string>())
      throw InputError(index.string(), 0, "shards[" + std::to_string(i) + "]: needs 'file' (a name in the "
                                                                          "checkpoint directory) and 'offset' >= 0 "
                                                                          "('at' >= 0 with 'count' >= 0)");
    // Without "at" the file holds one run from its start (indexes before shards had ranges).
    optim::StatePiece p;
    p.path = (fs::path(checkpoint_dir) / s["file"].get<std::string>()).string();
    p.offset = s["offset"].get<int64_t>();
    if (s.contains("at")) p.at = s["at"].get<int64_t>(), p.count = s["count"].get<int64_t>();
    out.push_back(p);
  }
  return out;
}

std::string resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / "state.json")) return path;
  if (!fs::is_directory(path)) throw InputError::field("--resume", path + " is not a checkpoint or run directory");
  std::vector<fs::path> all = list_checkpoints(fs::path(path) / "checkpoints");
  if (all.empty()) throw InputError::field("--resume", "no checkpoint in " + path + "/checkpoints");
  return all.back().string();
}

nlohmann::json read_checkpoint_state(const std::string& checkpoint_dir) {
  std::string file = (fs::path(checkpoint_dir) / "state.json").string();
  nlohmann::json j = nlohmann::json::parse(read_file(file), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError(file, 0, "not a JSON object");
  return j;
}

}  // namespace trex::train
