#include "trex/train/inference_checkpoint.h"

#include <filesystem>

#include "nlohmann/json.hpp"
#include "trex/core/safetensors.h"
#include "trex/model/config.h"
#include "trex/train/checkpoint.h"
#include "trex/train/config.h"
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
  model::ModelConfig config;
  if (!model_config.empty()) {
    config = model::load_model_config(model_config);
  } else {
    const std::string train_config = state.value("config", "");
    if (train_config.empty() || !fs::exists(train_config))
      throw InputError::field(field, (fs::path(l.dir) / "state.json").string() +
                                         ": its train config '" + train_config +
                                         "' is gone; name the model with --model-config");
    config = load_train_config(train_config).model;
  }
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
