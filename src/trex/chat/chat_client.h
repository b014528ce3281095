// An OpenAI-compatible chat-completions client (POST {base_url}/chat/completions).
//
// A part of its own, on util only: it knows messages and sampling parameters, nothing about
// benchmarks or corpora, so `trex eval gen` (oreval's prompts) and `trex data distil` (ordata's
// gates) both ask endpoints through it.
//
// Reliability: up to `concurrency` requests in flight (one libcurl handle per worker);
// transport errors, HTTP 408, 429 and 5xx, and a 200 whose body is not a chat completion are retried with exponential backoff
// (backoff_s * 2^attempt, at most max_retries times); other HTTP errors fail at once. With a
// cache folder, every successful response is stored under a hash of the request (written to
// a temporary name, then renamed), so a rerun after an interruption asks only for what is
// missing (resume).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trex::chat {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  double temperature = 0;
  double top_p = 1;
  int max_tokens = 4096;
  std::optional<int64_t> seed;
};

struct ChatConfig {
  std::string base_url;                   // e.g. http://127.0.0.1:8000/v1
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";  // read at construction; unset means no key
  int concurrency = 4;
  int max_retries = 4;
  double backoff_s = 1.0;
  double timeout_s = 600;                 // per request
  std::string cache_dir;                  // "" disables the cache
};

struct ChatResult {
  bool ok = false;
  std::string content;
  std::string error;     // when !ok: the last transport or HTTP error
  std::string error_code;  // when !ok: an HTTP error body's OpenAI-shaped error.code, if any
  long http_status = 0;
  int attempts = 0;      // requests sent (0 when served from the cache)
  bool from_cache = false;
  std::string reasoning;  // the message's reasoning_content (or reasoning) when the server sends one
};

class ChatClient {
 public:
  explicit ChatClient(ChatConfig config);
  ~ChatClient();
  ChatClient(const ChatClient&) = delete;
  ChatClient& operator=(const ChatClient&) = delete;

  // One request, on the calling thread.
  ChatResult complete(const ChatRequest& request);

  // Every request, at most config.concurrency at a time; results in input order.
  // `done` (may be empty) is called after each, from worker threads.
  std::vector<ChatResult> complete_all(const std::vector<ChatRequest>& requests,
                                       const std::function<void(size_t index, const ChatResult&)>& done = {});

  // The cache key of a request (hex): model, messages and sampling parameters.
  std::string cache_key(const ChatRequest& request) const;
  // The JSON body sent for a request.
  std::string request_body(const ChatRequest& request) const;

 private:
  ChatResult send(void* curl, const ChatRequest& request);
  ChatConfig config_;
  std::string api_key_;
};

}  // namespace trex::chat
