#include "trex/train/chat_template.h"

#include <stdexcept>

#include "trex/train/number_slots.h"

namespace trex::train {
namespace {

void append(TokenizedDoc& d, int32_t id, bool loss) {
  d.ids.push_back(id);
  d.loss.push_back(loss ? 1 : 0);
}

// Each message is mapped with the numbers of the system and user messages up to it (an
// assistant's: before it), so a message's tokens depend only on what precedes it: an earlier
// answer reads the same in the conversation it was trained in, in a shorter one and in a later
// turn's prompt, and never holds the slot of a number that only a later turn brings (at serving
// time such a slot could not be filled). Slot indices are first appearances, so they are the
// same whatever follows. Returns the prompt's numbers (all of them, prompt_numbers).
std::vector<std::string> append_messages(TokenizedDoc& d, const std::vector<ChatMessage>& messages, const Tokenizer& tok) {
  const size_t limit = size_t(tok.number_slot_count());
  std::vector<std::string> numbers;
  for (const ChatMessage& m : messages) {
    bool counted = m.role == Role::kAssistant;
    if (limit > 0 && m.role != Role::kAssistant) collect_numbers(m.content, limit, &numbers);
    append(d, tok.role_id(m.role), false);
    const std::vector<int32_t> ids = limit == 0 ? tok.encode(m.content) : tok.encode(to_slots(m.content, numbers));
    for (int32_t id : ids) append(d, id, counted);
    append(d, tok.end_id(), counted);
  }
  return numbers;
}

}  // namespace

std::vector<std::string> prompt_numbers(const std::vector<ChatMessage>& messages, const Tokenizer& tok) {
  std::vector<std::string> numbers;
  const size_t limit = size_t(tok.number_slot_count());
  if (limit == 0) return numbers;
  for (const ChatMessage& m : messages)
    if (m.role != Role::kAssistant) collect_numbers(m.content, limit, &numbers);
  return numbers;
}

std::vector<int32_t> unfillable_slot_ids(const Tokenizer& tok, size_t count) {
  std::vector<int32_t> ids;
  for (int i = int(count) + 1; i <= tok.number_slot_count(); ++i) {
    // A slot's spelling encodes to its one piece (Tokenizer::encode).
    const std::vector<int32_t> piece = tok.encode(slot_piece(i));
    if (piece.size() != 1) throw std::logic_error("number slot " + slot_piece(i) + " is not one token");
    ids.push_back(piece[0]);
  }
  return ids;
}

bool parse_role(const std::string& name, Role* role) {
  if (name == "system") *role = Role::kSystem;
  else if (name == "user") *role = Role::kUser;
  else if (name == "assistant") *role = Role::kAssistant;
  else return false;
  return true;
}

TokenizedDoc render_chat(const std::vector<ChatMessage>& messages, const Tokenizer& tok) {
  TokenizedDoc d;
  append(d, tok.bos_id(), false);
  append_messages(d, messages, tok);
  append(d, tok.eos_id(), false);
  return d;
}

std::vector<int32_t> render_prompt(const std::vector<ChatMessage>& messages, const Tokenizer& tok,
                                   std::vector<std::string>* numbers) {
  TokenizedDoc d;
  append(d, tok.bos_id(), false);
  std::vector<std::string> found = append_messages(d, messages, tok);
  if (numbers) *numbers = std::move(found);
  d.ids.push_back(tok.role_id(Role::kAssistant));
  return d.ids;
}

TokenizedDoc render_text(const std::string& text, const Tokenizer& tok) {
  TokenizedDoc d;
  append(d, tok.bos_id(), false);
  for (int32_t id : tok.encode(text)) append(d, id, true);
  append(d, tok.eos_id(), true);
  return d;
}

}  // namespace trex::train
