// Number slots (train/number_slots.h): which spans are numbers, the prompt's numbers, the mapping
// of a conversation and its exact inverse, a completion's slots replaced by the request's numbers
// (whole text and streamed in pieces), a slot with no number an error; the tokenizer's slot
// pieces (one token each, in the model file) and the chat template's mapping; without slots the
// tokenizer and template are unchanged.
#include "trex/train/number_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_text.h"
#include "trex/train/chat_template.h"
#include "trex/train/tokenizer.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::license_texts;
using testing::TempDir;

std::vector<std::string> numbers_of(const std::string& text) {
  std::vector<std::string> out;
  for (const NumberSpan& s : number_spans(text)) out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(NumberSlots, NumbersAreDigitRunsWithOneDecimalPartOutsideWords) {
  EXPECT_EQ(numbers_of("weighs 704 kg, price 0.7 and 2.13; at most 377."),
            (std::vector<std::string>{"704", "0.7", "2.13", "377"}));
  // Inside or glued to a word: none.
  EXPECT_EQ(numbers_of("x1 + y_2 <= 3x, the 2nd, 1e5, v4-nano"), (std::vector<std::string>{}));
  // Signs and operators are not part of a number; "1,000" is two.
  EXPECT_EQ(numbers_of("-5 <= z*12 (1,000) [3]"), (std::vector<std::string>{"5", "12", "1", "000", "3"}));
  EXPECT_EQ(numbers_of("7"), (std::vector<std::string>{"7"}));
}

TEST(NumberSlots, SlotSpellings) {
  EXPECT_EQ(slot_piece(1), "<n_1>");
  size_t length = 0;
  EXPECT_EQ(slot_at("a <n_12> b", 2, &length), 12);
  EXPECT_EQ(length, 6u);
  for (const char* no : {"<n_0>", "<n_>", "<n_1", "<n_01>", "<n 1>", "<n_12345>"})
    EXPECT_EQ(slot_at(no, 0, &length), 0) << no;
}

TEST(NumberSlots, MappingRoundTripsAndKeepsOtherNumbers) {
  const std::string prompt = "Plant A makes 17 units at 2.5 each; plant B makes 17 or 40.\n";
  std::vector<std::string> numbers;
  collect_numbers(prompt, 32, &numbers);
  EXPECT_EQ(numbers, (std::vector<std::string>{"17", "2.5", "40"}));  // distinct, in order
  EXPECT_EQ(to_slots(prompt, numbers), "Plant A makes <n_1> units at <n_2> each; plant B makes <n_1> or <n_3>.\n");
  const std::string program = "cap = 17\nprice = 2.5\nx = m.addVar(lb=0, ub=40)\ny1 = 17.0 * 3\n";
  const std::string mapped = to_slots(program, numbers);
  EXPECT_EQ(mapped, "cap = <n_1>\nprice = <n_2>\nx = m.addVar(lb=0, ub=<n_3>)\ny1 = 17.0 * 3\n");
  EXPECT_EQ(from_slots(mapped, numbers), program);
  EXPECT_EQ(from_slots(to_slots(prompt, numbers), numbers), prompt);
  // The limit: later numbers stay digits.
  std::vector<std::string> two;
  collect_numbers(prompt, 2, &two);
  EXPECT_EQ(to_slots(prompt, two), "Plant A makes <n_1> units at <n_2> each; plant B makes <n_1> or 40.\n");
}

TEST(NumberSlots, ASlotWithNoNumberIsAnError) {
  try {
    from_slots("x = <n_2> + <n_4>", {"5", "6", "7"});
    FAIL() << "no error";
  } catch (const NumberSlotError& e) {
    EXPECT_STREQ(e.what(), "the completion writes number slot <n_4>, but the prompt has 3 numbers");
  }
  EXPECT_THROW(from_slots("<n_1>", {}), NumberSlotError);
  // Spellings that are no slot stay text.
  EXPECT_EQ(from_slots("a <n_0> <n_x> <n_1 <", {"5"}), "a <n_0> <n_x> <n_1 <");
}

TEST(NumberSlots, StreamedPiecesDecodeAsTheWholeText) {
  const std::vector<std::string> numbers = {"17", "2.5", "40", "8", "9", "10", "11", "12", "13", "99"};
  const std::string text = "a = <n_1>\nb = <n_10> < <n_2>; c <n_3>> <n_";
  const std::string whole = from_slots(text, numbers);
  EXPECT_EQ(whole, "a = 17\nb = 99 < 2.5; c 40> <n_");
  for (size_t cut = 1; cut <= 3; ++cut) {
    SlotDecoder d(numbers);
    std::string out;
    for (size_t at = 0; at < text.size(); at += cut) out += d.push(text.substr(at, cut));
    out += d.flush();
    EXPECT_EQ(out, whole) << "pieces of " << cut;
  }
  // A held tail is released when the next piece shows it is no slot.
  SlotDecoder d(numbers);
  EXPECT_EQ(d.push("x <n_1"), "x ");
  EXPECT_EQ(d.push("x"), "<n_1x");
}

Tokenizer slot_tokenizer(int slots, int number_pieces = 0) {
  std::string numbers;
  for (int i = 0; i < 50; ++i) numbers += "price 4937 and 27, cost 4937 and 318\n";
  TokenizerOptions o;
  o.vocab = 420;
  o.number_slots = slots;
  o.number_pieces = number_pieces;
  return Tokenizer::train({license_texts()[0], numbers}, o);
}

TEST(NumberSlots, TokenizerSlotsAreOneTokenEachAndTravelInTheModelFile) {
  for (int pieces : {0, 3}) {
    Tokenizer t = slot_tokenizer(12, pieces);
    EXPECT_EQ(t.number_slot_count(), 12);
    EXPECT_EQ(t.number_piece_count(), pieces);
    EXPECT_LE(t.vocab_size(), 420);
    const std::string text = "cap = <n_1> + <n_12>*4937 - <n_13> <n_0>\n";
    const std::vector<int32_t> ids = t.encode(text);
    EXPECT_EQ(t.decode(ids), text);
    std::vector<std::string> pieces_of;
    for (int32_t id : ids) pieces_of.push_back(t.piece(id));
    EXPECT_EQ(std::count(pieces_of.begin(), pieces_of.end(), "<n_1>"), 1);
    EXPECT_EQ(std::count(pieces_of.begin(), pieces_of.end(), "<n_12>"), 1);
    // <n_13> is past the slots: ordinary text, no slot piece.
    EXPECT_EQ(std::count(pieces_of.begin(), pieces_of.end(), "<n_13>"), 0);
    TempDir dir("slots");
    t.save(dir.path("t.model"));
    Tokenizer back = Tokenizer::load(dir.path("t.model"));
    EXPECT_EQ(back.number_slot_count(), 12);
    EXPECT_EQ(back.encode(text), ids);
  }
  TokenizerOptions bad;
  bad.vocab = 420;
  bad.number_slots = -1;
  EXPECT_THROW(Tokenizer::train(license_texts(), bad), InputError);
}

TEST(NumberSlots, TheChatTemplateMapsTheConversationAndHandsBackThePromptsNumbers) {
  Tokenizer t = slot_tokenizer(4);
  const std::vector<ChatMessage> chat = {
      {Role::kSystem, "Round to 2 places."},
      {Role::kUser, "Make 17 or 40 units at 2.5 each, 9 and 8 more."},
      {Role::kAssistant, "x = 40 * 2.5 + 7 + 8"}};
  std::vector<std::string> numbers;
  const std::vector<int32_t> prompt = render_prompt({chat[0], chat[1]}, t, &numbers);
  EXPECT_EQ(numbers, (std::vector<std::string>{"2", "17", "40", "2.5"}));  // the first 4 slots
  EXPECT_EQ(t.decode(prompt), "Round to <n_1> places.Make <n_2> or <n_3> units at <n_4> each, 9 and 8 more.");
  const TokenizedDoc doc = render_chat(chat, t);
  std::vector<int32_t> answer;
  for (size_t i = 0; i < doc.ids.size(); ++i)
    if (doc.loss[i] && doc.ids[i] != t.end_id()) answer.push_back(doc.ids[i]);
  EXPECT_EQ(t.decode(answer), "x = <n_3> * <n_4> + 7 + 8");
  EXPECT_EQ(from_slots(t.decode(answer), numbers), chat[2].content);
  // Without slots: no numbers, the text as it is.
  Tokenizer plain = slot_tokenizer(0);
  std::vector<std::string> none = {"stale"};
  const std::vector<int32_t> p = render_prompt({chat[1]}, plain, &none);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(plain.decode(p), chat[1].content);
}

// Multi-turn chats (review rslots LOW 4): every message is mapped with the numbers of the system
// and user messages up to it, in training (render_chat) and serving (render_prompt) alike. The
// training tokens of a two-turn conversation begin with the serving prompt of either turn, and
// the first answer's tokens are the same trained alone or in the longer conversation; a number
// of the first answer that only the second question brings stays digits there (at serving time
// the first answer's prompt has no slot for it), while the second answer gets its slot.
TEST(NumberSlots, MultiTurnChatsMapEachMessageWithTheNumbersBeforeIt) {
  Tokenizer t = slot_tokenizer(8);
  const std::vector<ChatMessage> chat = {
      {Role::kSystem, "Round to 2 places."},
      {Role::kUser, "Make 17 units at 2.5 each."},
      {Role::kAssistant, "x = 17 * 2.5 + 40"},
      {Role::kUser, "Now 40 more, at 3."},
      {Role::kAssistant, "y = 40 * 3 + 17"}};
  const TokenizedDoc doc = render_chat(chat, t);
  for (size_t turn : {2u, 4u}) {
    std::vector<std::string> numbers;
    const std::vector<int32_t> prompt =
        render_prompt(std::vector<ChatMessage>(chat.begin(), chat.begin() + long(turn)), t, &numbers);
    ASSERT_LE(prompt.size(), doc.ids.size());
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), doc.ids.begin())) << "turn " << turn;
    const std::vector<std::string> want =
        turn == 2 ? std::vector<std::string>{"2", "17", "2.5"} : std::vector<std::string>{"2", "17", "2.5", "40", "3"};
    EXPECT_EQ(numbers, want);
  }
  // The answers as trained: each assistant message's counted tokens, <|end|> left out.
  auto answers_of = [&](const TokenizedDoc& d) {
    std::vector<std::string> out;
    std::vector<int32_t> ids;
    for (size_t i = 0; i < d.ids.size(); ++i) {
      if (!d.loss[i]) continue;
      if (d.ids[i] != t.end_id()) {
        ids.push_back(d.ids[i]);
        continue;
      }
      out.push_back(t.decode(ids));
      ids.clear();
    }
    return out;
  };
  const std::vector<std::string> answers = answers_of(doc);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0], "x = <n_2> * <n_3> + 40");  // 40 comes with the second question
  EXPECT_EQ(answers[1], "y = <n_4> * <n_5> + <n_2>");
  // The first turn alone trains on the same first answer.
  EXPECT_EQ(answers_of(render_chat({chat[0], chat[1], chat[2]}, t)), std::vector<std::string>{answers[0]});
}

}  // namespace
}  // namespace trex::train
