// A checkpoint that `trex train` wrote, loaded for sampling (trex generate, trex serve): the
// model with its weights and routing state file, the tokenizer, and whether it speaks the chat
// format.
//
// The checkpoint directory (or a run directory: its newest checkpoint) holds model.safetensors,
// tokenizer.model and state.json, which records the model config the run trained with
// (model_record.h). That record is the model (checkpoint_model): `model_config` (--model-config)
// is checked against it field by field and a difference is an error naming the checkpoint, the
// field and both values; the model config that state.json's train config names by path may have
// changed since, so a difference there is a one-line warning on stderr naming the field, and the
// recorded model loads. A checkpoint written before the record existed loads with
// `model_config` or the path-named config as it is now, with a one-line warning on stderr that
// it cannot be checked. Whether the weights
// include the MTP block is read from the weights themselves. Every error is an InputError
// naming `field`.
#pragma once

#include <memory>
#include <string>

#include "trex/model/transformer.h"
#include "trex/train/tokenizer.h"

namespace trex::train {

struct InferenceCheckpoint {
  std::string dir;                 // the resolved checkpoint directory
  std::string weights;             // its model.safetensors
  std::string name;                // the model config's name
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<Tokenizer> tok;
  bool sft = false;                // trained in SFT mode: prompts in the chat format
};

InferenceCheckpoint load_inference_checkpoint(const std::string& ckpt,
                                              const std::string& model_config = "",
                                              const std::string& field = "--ckpt");

}  // namespace trex::train
