// Optimizer::save_state and load_state: the optimizer state as a safetensors file (format in
// optimizer.h). Both stream through bounded pieces, so the swap optimizer checkpoints without
// ever holding its whole state in memory.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "trex/core/safetensors.h"
#include "trex/optim/optimizer.h"
#include "trex/util/error.h"

namespace trex::optim {
namespace {

constexpr char kFormat[] = "trex.optim.adamw";
constexpr char kVersion[] = "1";
constexpr const char* kArrayNames[] = {"master", "exp_avg", "exp_avg_sq"};

nlohmann::json groups_json(const std::vector<ParamGroup>& groups) {
  nlohmann::json j = nlohmann::json::array();
  for (const ParamGroup& g : groups)
    j.push_back({{"name", g.name},
                 {"size", g.size},
                 {"lr", g.hyper.lr},
                 {"beta1", g.hyper.beta1},
                 {"beta2", g.hyper.beta2},
                 {"eps", g.hyper.eps},
                 {"weight_decay", g.hyper.weight_decay}});
  return j;
}

}  // namespace

void Optimizer::save_state(const std::string& path) {
  std::vector<core::StTensorSource> tensors;
  for (int a = 0; a < 3; ++a) {
    core::StTensorSource t;
    t.name = kArrayNames[a];
    t.dtype = core::StDtype::kF32;
    t.shape = {num_params_};
    // The writer asks for pieces of 4 MiB (a multiple of 4 bytes) in order.
    t.fill = [this, a](uint64_t off, uint64_t size, std::byte* dst) {
      read_state(StateArray(a), int64_t(off / 4), int64_t(size / 4),
                 reinterpret_cast<float*>(dst));
    };
    tensors.push_back(std::move(t));
  }
  core::write_safetensors(path, tensors,
                          {{"format", kFormat},
                           {"version", kVersion},
                           {"step", std::to_string(step_)},
                           {"params", std::to_string(num_params_)},
                           {"groups", groups_json(groups_).dump()}});
}

namespace {

// One optimizer state file, validated: its step, groups (with their hyperparameters) and the
// three arrays of count elements inside the mapping.
struct StateFile {
  std::unique_ptr<core::SafetensorsFile> file;
  int64_t step = -1, count = 0;
  std::vector<ParamGroup> groups;
  const float* src[3] = {nullptr, nullptr, nullptr};
};

StateFile read_state_file(const std::string& path) {
  StateFile s;
  s.file = std::make_unique<core::SafetensorsFile>(path);
  const auto& meta = s.file->metadata();
  auto it = meta.find("format");
  if (it == meta.end() || it->second != kFormat)
    throw InputError(path, 0, "not a trex optimizer state (metadata format is '" +
                                  (it == meta.end() ? std::string("absent") : it->second) +
                                  "', expected '" + kFormat + "')");
  if (meta.count("version") == 0 || meta.at("version") != kVersion)
    throw InputError(path, 0, "optimizer state version '" +
                                  (meta.count("version") ? meta.at("version") : "absent") +
                                  "' is not supported (this trex reads version 1)");
  try {
    s.step = std::stoll(meta.count("step") ? meta.at("step") : "");
  } catch (const std::exception&) {
  }
  if (s.step < 0) throw InputError(path, 0, "metadata 'step' is missing or not a count");
  nlohmann::json gj = nlohmann::json::parse(meta.count("groups") ? meta.at("groups") : "", nullptr,
                                            /*allow_exceptions=*/false);
  if (gj.is_discarded() || !gj.is_array()) throw InputError(path, 0, "metadata 'groups' is not a JSON array");
  for (size_t g = 0; g < gj.size(); ++g) {
    const nlohmann::json& e = gj[g];
    try {
      ParamGroup p;
      p.name = e.at("name").get<std::string>();
      p.size = e.at("size").get<int64_t>();
      p.hyper.lr = e.at("lr").get<float>();
      p.hyper.beta1 = e.at("beta1").get<float>();
      p.hyper.beta2 = e.at("beta2").get<float>();
      p.hyper.eps = e.at("eps").get<float>();
      p.hyper.weight_decay = e.at("weight_decay").get<float>();
      s.count += p.size;
      s.groups.push_back(std::move(p));
    } catch (const nlohmann::json::exception&) {
      throw InputError(path, 0, "group " + std::to_string(g) + " in metadata 'groups' is malformed");
    }
  }
  for (int a = 0; a < 3; ++a) {
    const core::StTensorInfo& t = s.file->get(kArrayNames[a]);
    if (t.dtype != core::StDtype::kF32 || t.shape != std::vector<int64_t>{s.count})
      throw InputError(path, 0, std::string("tensor '") + kArrayNames[a] + "' is " +
                                    core::to_string(t.dtype) + " of " +
                                    std::to_string(t.numel()) + " elements, expected F32 [" +
                                    std::to_string(s.count) + "]");
    // The data buffer starts 8-byte aligned in the mapping and F32 offsets are multiples of 4.
    s.src[a] = reinterpret_cast<const float*>(s.file->bytes(t).data());
  }
  return s;
}

}  // namespace

void Optimizer::load_state(const std::string& path) { load_state_range({{path, 0}}, 0); }

void Optimizer::load_state_range(const std::vector<StatePiece>& pieces, int64_t first) {
  load_state_ranges(pieces, {{first, first + num_params_}});
}

void Optimizer::load_state_ranges(const std::vector<StatePiece>& pieces_in,
                                  const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<StatePiece> pieces = pieces_in;
  std::sort(pieces.begin(), pieces.end(), [](const StatePiece& a, const StatePiece& b) { return a.offset < b.offset; });
  // Each file once; a piece's extent in the logical state.
  std::map<std::string, StateFile> files;
  std::vector<int64_t> counts;
  for (const StatePiece& p : pieces) {
    auto it = files.find(p.path);
    if (it == files.end()) it = files.emplace(p.path, read_state_file(p.path)).first;
    const int64_t count = p.count >= 0 ? p.count : it->second.count - p.at;
    if (p.at < 0 || count < 0 || p.at + count > it->second.count)
      throw InputError(p.path, 0, "piece of " + std::to_string(count) + " elements at " + std::to_string(p.at) +
                                      " exceeds the file's " + std::to_string(it->second.count));
    counts.push_back(count);
  }
  // The pieces that overlap the ranges, validated before anything changes.
  struct Use {
    const StateFile* file;
    int64_t from, count, to;  // elements [from, from + count) of the file -> [to, ...) of this state
  };
  std::vector<Use> used;
  const StatePiece* step_of = nullptr;
  std::vector<ParamGroup> joined;  // their groups cut to the ranges, runs of one name joined
  int64_t packed = 0;
  const std::string where = pieces.empty() ? std::string("optimizer state") : pieces.front().path;
  size_t k0 = 0;  // pieces before it end before the current range (ranges ascend)
  for (const auto& [first, last] : ranges) {
    int64_t covered = first;
    while (k0 < pieces.size() && pieces[k0].offset + counts[k0] <= first) ++k0;
    for (size_t k = k0; k < pieces.size() && pieces[k].offset < last; ++k) {
      const StatePiece& p = pieces[k];
      const StateFile& s = files.at(p.path);
      const int64_t lo = std::max(first, p.offset), hi = std::min(last, p.offset + counts[k]);
      if (hi <= lo) continue;
      if (lo != covered)
        throw InputError(p.path, 0, "optimizer state pieces leave elements [" + std::to_string(covered) + ", " +
                                        std::to_string(lo) + ") uncovered");
      if (step_of && s.step != files.at(step_of->path).step)
        throw InputError(p.path, 0, "step " + std::to_string(s.step) + " differs from " + step_of->path +
                                        "'s step " + std::to_string(files.at(step_of->path).step));
      if (!step_of) step_of = &p;
      const int64_t flo = p.at + (lo - p.offset), fhi = p.at + (hi - p.offset);  // in the file
      int64_t at = 0;
      for (const ParamGroup& g : s.groups) {
        const int64_t glo = std::max(flo, at), ghi = std::min(fhi, at + g.size);
        at += g.size;
        if (ghi <= glo) continue;
        if (!joined.empty() && joined.back().name == g.name) {
          joined.back().size += ghi - glo;
        } else {
          joined.push_back(g);
          joined.back().size = ghi - glo;
        }
      }
      used.push_back({&s, flo, hi - lo, packed + (lo - first)});
      covered = hi;
    }
    if (covered != last)
      throw InputError(where, 0, "optimizer state does not cover elements [" + std::to_string(covered) + ", " +
                                     std::to_string(last) + ")");
    packed += last - first;
  }
  if (packed != num_params_)
    throw std::logic_error("Optimizer::load_state_ranges: the ranges hold " + std::to_string(packed) +
                           " elements, the optimizer " + std::to_string(num_params_));
  if (joined.size() != groups_.size())
    throw InputError(where, 0, "written for " + std::to_string(joined.size()) +
                                   " parameter groups, this optimizer has " + std::to_string(groups_.size()));
  for (size_t g = 0; g < groups_.size(); ++g)
    if (joined[g].name != groups_[g].name || joined[g].size != groups_[g].size)
      throw InputError(where, 0, "group " + std::to_string(g) + " is '" + joined[g].name + "' of " +
                                     std::to_string(joined[g].size) + " elements, this optimizer's is '" +
                                     groups_[g].name + "' of " + std::to_string(groups_[g].size));
  const int64_t piece = load_piece();
  for (const Use& u : used)
    for (int64_t done = 0; done < u.count; done += piece) {
      const int64_t n = std::min(piece, u.count - done), k = u.from + done;
      write_state(u.to + done, n, u.file->src[0] + k, u.file->src[1] + k, u.file->src[2] + k);
    }
  step_ = step_of ? files.at(step_of->path).step : 0;
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].hyper = joined[g].hyper;
}

}  // namespace trex::optim
