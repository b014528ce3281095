// The server-sent event of a streamed piece of text ("data: {chunk}\n\n"), the bytes that
// nlohmann::json gives for the chunk object (keys in its sorted order, the text escaped by its
// serializer, invalid UTF-8 replaced), built from the stream's fixed parts and the escaped text.
// A stream sends one per stream_interval tokens; building the chunk as a json object (a map per
// level) and dumping it was ~18% of the HTTP threads' CPU at eight streams (session 18, perf).
// The other events of a stream (role, finish, usage, error) are rarer and stay json objects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trex::serve {

class TextChunkEvent {
 public:
  // chat: a chat.completion.chunk with a content delta; otherwise a text_completion chunk.
  TextChunkEvent(bool chat, const std::string& id, const std::string& object, int64_t created,
                 const std::string& model);
  // The event of choice `index` with `text` and no finish reason.
  std::string operator()(size_t index, std::string_view text) const;

 private:
  bool chat_;
  std::string tail_;  // from the "created" field to the event's end
};

}  // namespace trex::serve
