#include "trex/train/inference_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include "nlohmann/json.hpp"
#include "trex/core/safetensors.h"
#include "trex/model/config.h"
#include "trex/train/checkpoint.h"
#include "trex/train/config.h"
#include "trex/train/model_record.h"
#include "trex/util/error.h"

namespace trex::train {

namespace fs = std::filesystem;

InferenceCheckpoint load_inference_checkpoint(const std::string& ckpt,
                                              const std::string& model_config,
                                              const std::string& field) {
  InferenceCheckpoint l;
  try {
    l.dir = resolve_checkpoint(ckpt);
  } catch (const InputError& e) {
    throw InputError::field(field, e.detail());
  }
  const nlohmann::json state = read_checkpoint_state(l.dir);
  const std::string state_file = (fs::path(l.dir) / "state.json").string();
  // The checkpoint's own record of its model; a config given or named by path is only checked
  // against it (the file may have changed since: model_record.h).
  const std::optional<model::ModelConfig> recorded = recorded_model(state, state_file);
  CheckpointModel chosen;
  if (!model_config.empty()) {
    chosen = checkpoint_model(recorded, model::load_model_config(model_config), "--model-config " + model_config,
                              GivenModel::kExplicit, l.dir, field);
  } else {
    const std::string train_config = state.value("config", "");
    if (!recorded && (train_config.empty() || !fs::exists(train_config)))
      throw InputError::field(field, state_file + ": its train config '" + train_config +
                                         "' is gone; name the model with --model-config");
    std::optional<TrainConfig> tc;
    if (fs::exists(train_config)) {
      try {
        tc = load_train_config_without_model(train_config);
      } catch (const InputError& e) {
        if (!recorded) throw;
        std::fprintf(stderr, "trex: warning: %s: cannot read its train config to check the model against it (%s); using the recorded model config\n",
                     l.dir.c_str(), e.what());
      }
    }
    // The model file the train config names: missing or unparseable with a record is a warning
    // (the same rule as trex train --resume alone).
    chosen = tc ? checkpoint_model_by_path(recorded, tc->model_file, tc->model_file + " (through " + train_config + ")",
                                           l.dir, field)
                : checkpoint_model(recorded, std::nullopt, "", GivenModel::kByPath, l.dir, field);
  }
  if (!chosen.warning.empty()) std::fprintf(stderr, "trex: warning: %s\n", chosen.warning.c_str());
  const model::ModelConfig& config = chosen.model;
  l.weights = (fs::path(l.dir) / "model.safetensors").string();
  bool with_mtp = false;
  {
    core::SafetensorsFile f(l.weights);
    with_mtp = f.find("mtp.0.e_proj") != nullptr;
  }
  l.name = config.name;
  l.model = std::make_unique<model::Transformer>(config, 0, with_mtp);
  l.model->load(l.weights);
  l.tok = std::make_unique<Tokenizer>(Tokenizer::load((fs::path(l.dir) / "tokenizer.model").string()));
  if (l.tok->vocab_size() > config.vocab)
    throw InputError::field(field, "tokenizer has " + std::to_string(l.tok->vocab_size()) +
                                       " pieces, the model only " + std::to_string(config.vocab));
  l.sft = state.value("mode", "") == "sft";
  return l;
}

}  // namespace trex::train
