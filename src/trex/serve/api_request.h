// OpenAI request bodies, read and checked: what /v1/chat/completions and /v1/completions ask
// for, as one description the server turns into engine requests. Unknown fields are ignored; a
// field of the wrong type or out of range is an ApiError naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/train/chat_template.h"

namespace trex::serve {

// An error the client caused, in OpenAI's terms.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "",
           std::string type = "invalid_request_error", std::string code = "")
      : std::runtime_error(message), status(status), param(std::move(param)),
        type(std::move(type)), code(std::move(code)) {}
  int status;
  std::string param, type, code;
};

// A request body that must be a JSON object. Throws ApiError (400).
nlohmann::json parse_body(const std::string& body);

// {"error": {...}} for an ApiError.
nlohmann::json error_body(const ApiError& e);

struct CompletionRequest {
  bool chat = false;
  std::string model;                        // empty: not given
  std::vector<train::ChatMessage> messages; // chat
  std::string prompt_text;                  // completions: the prompt as text
  std::vector<int32_t> prompt_ids;          // completions: the prompt as token ids, if given so
  bool prompt_is_ids = false;
  double temperature = 1.0;
  double top_p = 1.0;
  std::optional<int64_t> max_tokens;        // absent: the default of the endpoint
  std::vector<std::string> stop;
  int n = 1;
  std::optional<uint64_t> seed;
  bool stream = false;
  bool include_usage = false;
  bool echo = false;                        // completions
  int logprobs = 0;                         // completions: top alternatives (0..5); chat: top_logprobs
  bool want_logprobs = false;               // chat "logprobs": true, or completions logprobs given
};

// Parses a body. Throws ApiError (400) naming the field.
CompletionRequest parse_chat_request(const std::string& body, int max_n);
CompletionRequest parse_completion_request(const std::string& body, int max_n);
// The messages of a chat body ("messages" field), for /tokenize.
std::vector<train::ChatMessage> parse_messages(const nlohmann::json& messages);

}  // namespace trex::serve
