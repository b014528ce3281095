// Choosing the next token from a model's logits: greedy, or temperature and top-p (nucleus)
// sampling, driven by a uniform draw the caller supplies (so a seeded generator is
// reproducible, and tests can pick the draw).
#pragma once

#include <cstdint>
#include <span>

namespace trex::model {

// logits [V] -> a token id.
//   temperature <= 0: argmax (ties to the lower id); u is ignored.
//   otherwise p = softmax(logits / temperature) in double. top_p >= 1: the token is the first
//   id whose cumulative mass (in id order) exceeds u. top_p < 1: tokens in descending p (ties
//   to the lower id); the nucleus is the shortest prefix whose mass reaches top_p; the token is
//   the first of the nucleus whose cumulative mass exceeds u times the nucleus mass (only as
//   much of the order is sorted as the nucleus needs). REQUIRES: V >= 1, 0 <= u < 1, top_p > 0.
// `excluded`: ids never drawn, exactly as if their logits were -inf (the softmax, the nucleus and
// the draw are over the other ids; ids outside [0, V) are ignored). A request's number slots that
// its prompt has no number for are excluded so (train/chat_template.h, unfillable_slot_ids).
// Throws InputError when every id is excluded.
int32_t sample_token(std::span<const float> logits, double temperature, double top_p, double u,
                     std::span<const int32_t> excluded = {});

}  // namespace trex::model
