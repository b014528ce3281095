// The model configuration a checkpoint records, so that a checkpoint describes its own model.
//
// state.json's "model_config" holds the text of the model config file the run was trained with
// (parsed back with model::parse_model_config at load), every field that defines the
// computation with its value, and a hash of those fields:
//   "model_config": {"file": "configs/model/x.toml", "text": "[model]\n...",
//                    "fields": {"model.vocab": "4096", ..., "attention.rope_dims": "64", ...},
//                    "hash": "fnv1a64:0123456789abcdef"}
// A checkpoint names its train config by path, and that config names the model by path; the
// file can change afterwards (rope_dims 16 -> 64 keeps every parameter shape), so a load takes
// the recorded config and refuses a given or path-resolved config that differs in any field.
// Only name, file and source (labels) are left out; every other field counts, training-only
// ones too (init_std, bias_update_rate, the loss weights): a resume continues the same run.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trex/model/config.h"

namespace trex::train {

// The computation-defining fields of `m` in a fixed order: "table.key" (the TOML names) and the
// value as text.
std::vector<std::pair<std::string, std::string>> model_fields(const model::ModelConfig& m);

// The "model_config" record of `m`, read from m.file. Throws InputError naming the file when it
// no longer holds `m` (it changed since the run read it).
nlohmann::json model_record(const model::ModelConfig& m);

// The model config a checkpoint's state records, or nullopt for a checkpoint written before
// checkpoints recorded it. Throws InputError naming state_file for a malformed record.
std::optional<model::ModelConfig> recorded_model(const nlohmann::json& state, const std::string& state_file);

// Throws InputError::field(field, ...) naming the checkpoint, the first differing field and
// both values when `given` (read from given_label) differs from the recorded config.
void check_same_model(const model::ModelConfig& recorded, const model::ModelConfig& given, const std::string& ckpt,
                      const std::string& given_label, const std::string& field);

}  // namespace trex::train
