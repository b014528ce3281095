// The chat template: how an OpenAI-style conversation becomes tokens, and which of them the SFT
// loss counts.
//
//   <s> <|system|> content <|end|> <|user|> content <|end|> <|assistant|> content <|end|> ... </s>
//
// Role markers and <|end|> are control ids (tokenizer.h), so no message text can forge them.
// The loss counts an assistant's content tokens and its closing <|end|> (so the model learns
// where to stop); everything else (<s>, markers, system and user text, </s>) is context only.
// A prompt for generation ends with an open "<|assistant|>".
//
// With a tokenizer that has number slots (number_slots.h), every conversation is mapped before it
// is tokenized: the prompt's numbers (system and user messages) become slots in every message,
// each message with the numbers of the messages up to it (render_chat and render_prompt alike, so
// a conversation's training tokens begin with the tokens of any of its turns' prompts).
// render_prompt hands the prompt's numbers to the caller, who decodes the completion with them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trex/train/tokenizer.h"

namespace trex::train {

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
};

// Tokens with a per-token loss flag: loss[j] = 1 when token j is a prediction target.
struct TokenizedDoc {
  std::vector<int32_t> ids;
  std::vector<uint8_t> loss;
};

// A whole conversation for training.
TokenizedDoc render_chat(const std::vector<ChatMessage>& messages, const Tokenizer& tok);
// The tokens of a prompt: the messages, then "<|assistant|>" for the model to continue.
// `numbers` (when given) receives the prompt's numbers, slot i's at i - 1 (empty without slots).
std::vector<int32_t> render_prompt(const std::vector<ChatMessage>& messages, const Tokenizer& tok,
                                   std::vector<std::string>* numbers = nullptr);
// The prompt's numbers (number_slots.h) of `messages`: at most tok.number_slot_count().
std::vector<std::string> prompt_numbers(const std::vector<ChatMessage>& messages, const Tokenizer& tok);
// The ids of the slots a prompt with `count` numbers has no number for (slots count + 1 .. K):
// a sampler excludes them, so a completion never writes a slot that cannot be filled. Empty
// without slots.
std::vector<int32_t> unfillable_slot_ids(const Tokenizer& tok, size_t count);
// Plain text, for continued pre-training: <s> text </s>, every token but <s> counted.
TokenizedDoc render_text(const std::string& text, const Tokenizer& tok);

// "system" | "user" | "assistant"; false for anything else.
bool parse_role(const std::string& name, Role* role);

}  // namespace trex::train
