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
// the recorded config (checkpoint_model). Only name, file and source (labels) are left out;
// every other field counts, training-only ones too (init_std, bias_update_rate, the loss
// weights): a resume continues the same run. A run that starts from a checkpoint's weights
// (run.init_from) may change the training-only fields and nothing else (check_init_model).
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
// The record of `m` with `text` as its file's text: a resumed run records the text its
// checkpoint recorded, whatever m.file holds now. Throws InputError when `text` is not `m`.
nlohmann::json model_record(const model::ModelConfig& m, const std::string& text);

// The model config a checkpoint's state records, or nullopt for a checkpoint written before
// checkpoints recorded it. Throws InputError naming state_file for a malformed record.
std::optional<model::ModelConfig> recorded_model(const nlohmann::json& state, const std::string& state_file);

// Throws InputError::field(field, ...) naming the checkpoint, the first differing field and
// both values when `given` (read from given_label) differs from the recorded config.
void check_same_model(const model::ModelConfig& recorded, const model::ModelConfig& given, const std::string& ckpt,
                      const std::string& given_label, const std::string& field);

// How the model config checked against a checkpoint's record was named.
enum class GivenModel {
  kExplicit,  // by the user for this load (--model-config; --config beside --resume): a difference is refused
  kByPath,    // through the paths state.json records, whose file may have changed since: the record wins
};

// The model a checkpoint is loaded as: the one place trex serve, trex generate and trex train
// --resume decide it. `warning` is one line for stderr (without "trex: warning: "), or "".
struct CheckpointModel {
  model::ModelConfig model;
  std::string warning;
};
// With a record: the recorded model. A `given` config (read from given_label) that differs is
// refused as check_same_model does when kExplicit; kByPath warns instead, naming the first
// differing field, both values and how many fields differ. Without a record (a checkpoint written
// before checkpoints recorded their model): `given` as it is now, with a warning that it cannot be
// checked; throws InputError::field(field, ...) when there is no `given` either.
CheckpointModel checkpoint_model(const std::optional<model::ModelConfig>& recorded,
                                 const std::optional<model::ModelConfig>& given, const std::string& given_label,
                                 GivenModel how, const std::string& ckpt, const std::string& field);

// The model a checkpoint is loaded as when no config is named for the load (trex serve and
// generate without --model-config, trex train --resume without --config): the model file
// `model_file` that state.json's train config names (given_label names it in messages) is read
// and decided against the record as checkpoint_model does for kByPath. With a record, a file
// that is missing or no longer parses is a warning naming it and why, and the recorded model is
// used (the record alone defines the weights' model); without a record, its InputError is thrown.
CheckpointModel checkpoint_model_by_path(const std::optional<model::ModelConfig>& recorded,
                                         const std::string& model_file, const std::string& given_label,
                                         const std::string& ckpt, const std::string& field);

// Whether a field only steers training and leaves what the parameters compute unchanged:
// model.init_std (unused when the weights are loaded), model.train_seq_len (the length a run
// trains at; the rotary tables grow on demand), the loss weights model.mtp_loss_weight and
// indexer.loss_weight, and ffn.bias_update_rate (how fast the balancing bias moves; 0 to freeze
// it for post-training). Every other field changes a shape, the positions, a norm, the routing
// or the arithmetic, so the weights would mean something else.
bool training_only_field(const std::string& key);

// A run starting from a checkpoint's weights (run.init_from) whose recorded model is `recorded`
// and whose own model is `run` (read from run_label): throws InputError::field(field, ...) naming
// the checkpoint, the first differing field that is not training-only and both values; returns a
// one-line note (without "trex: note: ") naming each training-only field that differs with both
// values, or "" when none does.
std::string check_init_model(const model::ModelConfig& recorded, const model::ModelConfig& run, const std::string& ckpt,
                             const std::string& run_label, const std::string& field);

}  // namespace trex::train
