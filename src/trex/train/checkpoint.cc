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

std::string write_checkpoint(const std::string& run_dir, int64_t step, const model::Transformer& model,
                             optim::Optimizer& optimizer, const nlohmann::json& state, const Tokenizer& tok,
                             int64_t keep_last) {
  fs::path root = fs::path(run_dir) / "checkpoints";
  fs::create_directories(root);
  std::string name = checkpoint_name(step);
  fs::path tmp = root / (".tmp-" + name + "-" + std::to_string(::getpid()));
  fs::path final_dir = root / name;
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  model.save((tmp / "model.safetensors").string(), {{"step", std::to_string(step)}});
  optimizer.save_state((tmp / "optimizer.safetensors").string());
  tok.save((tmp / "tokenizer.model").string());
  write_file_atomic((tmp / "state.json").string(), state.dump(2) + "\n");
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
