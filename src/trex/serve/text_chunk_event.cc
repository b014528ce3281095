#include "trex/serve/text_chunk_event.h"

#include "nlohmann/json.hpp"

namespace trex::serve {

namespace {

std::string json_string(std::string_view s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

TextChunkEvent::TextChunkEvent(bool chat, const std::string& id, const std::string& object,
                               int64_t created, const std::string& model)
    : chat_(chat) {
  tail_ = "}],\"created\":" + std::to_string(created) + ",\"id\":" + json_string(id) +
          ",\"model\":" + json_string(model) + ",\"object\":" + json_string(object) +
          ",\"system_fingerprint\":\"trex\"}\n\n";
}

std::string TextChunkEvent::operator()(size_t index, std::string_view text) const {
  const std::string t = json_string(text);
  const std::string i = std::to_string(index);
  std::string e;
  e.reserve(t.size() + tail_.size() + 96);
  if (chat_) {
    e += "data: {\"choices\":[{\"delta\":{\"content\":";
    e += t;
    e += "},\"finish_reason\":null,\"index\":";
    e += i;
    e += ",\"logprobs\":null";
  } else {
    e += "data: {\"choices\":[{\"finish_reason\":null,\"index\":";
    e += i;
    e += ",\"logprobs\":null,\"text\":";
    e += t;
  }
  e += tail_;
  return e;
}

}  // namespace trex::serve
