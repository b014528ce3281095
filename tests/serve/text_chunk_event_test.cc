// TextChunkEvent gives the bytes that the server's json chunk object gave before it (the
// object built as server.cc builds its other chunks, dumped with invalid UTF-8 replaced), for
// chat and completion chunks, texts with quotes, backslashes, control characters, multibyte and
// invalid UTF-8, and ids and model names that need escaping.
#include "trex/serve/text_chunk_event.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace trex::serve {
namespace {

using nlohmann::json;

std::string reference(bool chat, const std::string& id, const std::string& object, int64_t created,
                      const std::string& model, size_t i, const std::string& text) {
  json choice = {{"index", i}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  if (chat)
    choice["delta"] = json{{"content", text}};
  else
    choice["text"] = text;
  json c = {{"id", id}, {"object", object}, {"created", created}, {"model", model},
            {"system_fingerprint", "trex"}, {"choices", json::array({choice})}};
  return "data: " + c.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

TEST(TextChunkEvent, EqualsTheJsonObjectsDump) {
  std::vector<std::string> texts = {" Da", "x", "\"quoted\" \\ back", "tab\there\nnew\r\x01\x1f\x7f",
                                    "café € 日本語 😀", "cut \xE2\x82", "\xFF\xFE invalid", "</s>",
                                    std::string("nul\0byte", 8)};
  std::mt19937 rng(18);
  for (int k = 0; k < 200; ++k) {  // random bytes: any mix of valid and invalid UTF-8
    std::string s;
    for (int n = int(rng() % 24); n > 0; --n) s += char(rng() % 256);
    if (!s.empty()) texts.push_back(s);
  }
  const std::vector<std::string> models = {"v4-nano", "odd \"name\"\\ é"};
  for (bool chat : {true, false})
    for (const std::string& model : models) {
      const std::string object = chat ? "chat.completion.chunk" : "text_completion";
      const std::string id = chat ? "chatcmpl-7-12345" : "cmpl-\"x\"";
      const TextChunkEvent event(chat, id, object, 1796535639, model);
      for (size_t i : {size_t(0), size_t(3), size_t(12)})
        for (const std::string& t : texts)
          ASSERT_EQ(event(i, t), reference(chat, id, object, 1796535639, model, i, t))
              << "chat " << chat << " choice " << i << " text " << json(t).dump(-1, ' ', true, json::error_handler_t::replace);
    }
}

}  // namespace
}  // namespace trex::serve
