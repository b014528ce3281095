// Optimizer::save_state and load_state: the optimizer state as a safetensors file (format in
// optimizer.h). Both stream through bounded pieces, so the swap optimizer checkpoints without
// ever holding its whole state in memory.
#include <cstring>
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

void Optimizer::load_state(const std::string& path) {
  core::SafetensorsFile f(path);
  const auto& meta = f.metadata();
  auto it = meta.find("format");
  if (it == meta.end() || it->second != kFormat)
    throw InputError(path, 0, "not a trex optimizer state (metadata format is '" +
                                  (it == meta.end() ? std::string("absent") : it->second) +
                                  "', expected '" + kFormat + "')");
  if (meta.count("version") == 0 || meta.at("version") != kVersion)
    throw InputError(path, 0, "optimizer state version '" +
                                  (meta.count("version") ? meta.at("version") : "absent") +
                                  "' is not supported (this trex reads version 1)");
  int64_t step = -1;
  try {
    step = std::stoll(meta.count("step") ? meta.at("step") : "");
  } catch (const std::exception&) {
  }
  if (step < 0) throw InputError(path, 0, "metadata 'step' is missing or not a count");
  nlohmann::json gj = nlohmann::json::parse(meta.count("groups") ? meta.at("groups") : "", nullptr,
                                            /*allow_exceptions=*/false);
  if (gj.is_discarded() || !gj.is_array() || gj.size() != groups_.size())
    throw InputError(path, 0, "written for " +
                                  (gj.is_array() ? std::to_string(gj.size()) : std::string("?")) +
                                  " parameter groups, this optimizer has " +
                                  std::to_string(groups_.size()));
  std::vector<ParamGroup> loaded = groups_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const nlohmann::json& e = gj[g];
    try {
      if (e.at("name").get<std::string>() != groups_[g].name ||
          e.at("size").get<int64_t>() != groups_[g].size)
        throw InputError(path, 0, "group " + std::to_string(g) + " is '" +
                                      e.at("name").get<std::string>() + "' of " +
                                      std::to_string(e.at("size").get<int64_t>()) +
                                      " elements, this optimizer's is '" + groups_[g].name +
                                      "' of " + std::to_string(groups_[g].size));
      kernels::AdamWHyper& h = loaded[g].hyper;
      h.lr = e.at("lr").get<float>();
      h.beta1 = e.at("beta1").get<float>();
      h.beta2 = e.at("beta2").get<float>();
      h.eps = e.at("eps").get<float>();
      h.weight_decay = e.at("weight_decay").get<float>();
    } catch (const nlohmann::json::exception&) {
      throw InputError(path, 0, "group " + std::to_string(g) + " in metadata 'groups' is malformed");
    }
  }
  const float* src[3];
  for (int a = 0; a < 3; ++a) {
    const core::StTensorInfo& t = f.get(kArrayNames[a]);
    if (t.dtype != core::StDtype::kF32 || t.shape != std::vector<int64_t>{num_params_})
      throw InputError(path, 0, std::string("tensor '") + kArrayNames[a] + "' is " +
                                    core::to_string(t.dtype) + " of " +
                                    std::to_string(t.numel()) + " elements, expected F32 [" +
                                    std::to_string(num_params_) + "]");
    // The data buffer starts 8-byte aligned in the mapping and F32 offsets are multiples of 4.
    src[a] = reinterpret_cast<const float*>(f.bytes(t).data());
  }
  int64_t piece = load_piece();
  for (int64_t lo = 0; lo < num_params_; lo += piece) {
    int64_t n = std::min(piece, num_params_ - lo);
    write_state(lo, n, src[0] + lo, src[1] + lo, src[2] + lo);
  }
  step_ = step;
  groups_ = std::move(loaded);
}

}  // namespace trex::optim
