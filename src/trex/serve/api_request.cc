#include "trex/serve/api_request.h"

namespace trex::serve {

namespace {

using nlohmann::json;


double number(const json& j, const char* name, double lo, double hi, double fallback) {
  if (!j.contains(name) || j[name].is_null()) return fallback;
  if (!j[name].is_number())
    throw ApiError(400, std::string("'") + name + "' must be a number", name);
  const double v = j[name].get<double>();
  if (!(v >= lo && v <= hi))
    throw ApiError(400, std::string("'") + name + "' must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "], got " + std::to_string(v),
                   name);
  return v;
}

std::optional<int64_t> integer(const json& j, const char* name, int64_t lo, int64_t hi) {
  if (!j.contains(name) || j[name].is_null()) return std::nullopt;
  if (!j[name].is_number_integer())
    throw ApiError(400, std::string("'") + name + "' must be an integer", name);
  const int64_t v = j[name].get<int64_t>();
  if (v < lo || v > hi)
    throw ApiError(400, std::string("'") + name + "' must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "], got " + std::to_string(v),
                   name);
  return v;
}

bool boolean(const json& j, const char* name) {
  if (!j.contains(name) || j[name].is_null()) return false;
  if (!j[name].is_boolean()) throw ApiError(400, std::string("'") + name + "' must be true or false", name);
  return j[name].get<bool>();
}

// The fields both endpoints share.
void common(const json& j, int max_n, CompletionRequest& r) {
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) throw ApiError(400, "'model' must be a string", "model");
    r.model = j["model"].get<std::string>();
  }
  r.temperature = number(j, "temperature", 0, 2, 1.0);
  r.top_p = number(j, "top_p", 0, 1, 1.0);
  if (r.top_p <= 0) throw ApiError(400, "'top_p' must be greater than 0", "top_p");
  r.max_tokens = integer(j, "max_tokens", 0, INT32_MAX);
  if (auto m = integer(j, "max_completion_tokens", 0, INT32_MAX)) r.max_tokens = m;
  r.n = int(integer(j, "n", 1, max_n).value_or(1));
  if (auto s = integer(j, "seed", INT64_MIN, INT64_MAX)) r.seed = uint64_t(*s);
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array() && s.size() <= 4) {
      for (const json& x : s) {
        if (!x.is_string()) throw ApiError(400, "'stop' must be a string or up to 4 strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw ApiError(400, "'stop' must be a string or up to 4 strings", "stop");
    }
  }
  r.stream = boolean(j, "stream");
  if (j.contains("stream_options") && j["stream_options"].is_object())
    r.include_usage = boolean(j["stream_options"], "include_usage");
}

std::string content_text(const json& c, size_t i) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_null()) return "";
  if (c.is_array()) {  // content parts: only text
    std::string out;
    for (const json& part : c) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string())
        throw ApiError(400, "message " + std::to_string(i) + ": only text content parts are supported",
                       "messages");
      out += part["text"].get<std::string>();
    }
    return out;
  }
  throw ApiError(400, "message " + std::to_string(i) + ": 'content' must be a string or text parts",
                 "messages");
}

}  // namespace

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the body is not JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "the body must be a JSON object");
  return j;
}

json error_body(const ApiError& e) {
  json err = {{"message", e.what()}, {"type", e.type}};
  err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
  err["code"] = e.code.empty() ? json(nullptr) : json(e.code);
  return {{"error", err}};
}

std::vector<train::ChatMessage> parse_messages(const json& messages) {
  if (!messages.is_array() || messages.empty())
    throw ApiError(400, "'messages' must be a non-empty list", "messages");
  std::vector<train::ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw ApiError(400, "message " + std::to_string(i) + " needs a 'role'", "messages");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    train::ChatMessage cm;
    if (!train::parse_role(role, &cm.role))
      throw ApiError(400, "message " + std::to_string(i) + ": role '" + role +
                              "' is not supported (system, developer, user, assistant)",
                     "messages");
    cm.content = content_text(m.contains("content") ? m["content"] : json(nullptr), i);
    out.push_back(std::move(cm));
  }
  return out;
}

CompletionRequest parse_chat_request(const std::string& body, int max_n) {
  const json j = parse_body(body);
  CompletionRequest r;
  r.chat = true;
  if (!j.contains("messages")) throw ApiError(400, "'messages' is required", "messages");
  r.messages = parse_messages(j["messages"]);
  common(j, max_n, r);
  r.want_logprobs = boolean(j, "logprobs");
  r.logprobs = int(integer(j, "top_logprobs", 0, 20).value_or(0));
  if (r.logprobs > 0 && !r.want_logprobs)
    throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
  return r;
}

CompletionRequest parse_completion_request(const std::string& body, int max_n) {
  const json j = parse_body(body);
  CompletionRequest r;
  if (!j.contains("prompt")) throw ApiError(400, "'prompt' is required", "prompt");
  json p = j["prompt"];
  if (p.is_array() && p.size() == 1 && p[0].is_string()) p = p[0];
  if (p.is_string()) {
    r.prompt_text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    r.prompt_is_ids = true;
    for (const json& x : p) {
      if (!x.is_number_integer()) throw ApiError(400, "'prompt' token ids must be integers", "prompt");
      r.prompt_ids.push_back(x.get<int32_t>());
    }
  } else {
    throw ApiError(400, "'prompt' must be a string, a list of one string, or a list of token ids "
                        "(one prompt per request)", "prompt");
  }
  common(j, max_n, r);
  r.echo = boolean(j, "echo");
  if (auto lp = integer(j, "logprobs", 0, 5)) {
    r.want_logprobs = true;
    r.logprobs = int(*lp);
  }
  return r;
}

}  // namespace trex::serve
