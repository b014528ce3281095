// The OpenAI-compatible client over libcurl; behaviour is described in chat_client.h.
#include "trex/chat/chat_client.h"

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::chat {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// FNV-1a, twice with different offsets: a stable 128-bit name for a cache file.
std::string stable_hash(const std::string& s) {
  uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
  for (unsigned char c : s) {
    a = (a ^ c) * 0x100000001b3ULL;
    b = (b ^ c) * 0x100000001b3ULL;
    b ^= b >> 29;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
  return buf;
}

bool retryable(long status) { return status == 408 || status == 429 || status >= 500; }

}  // namespace

ChatClient::ChatClient(ChatConfig config) : config_(std::move(config)) {
  global_init();
  if (config_.base_url.empty()) throw InputError::field("--endpoint", "empty base URL");
  while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
  if (config_.concurrency < 1) throw InputError::field("--concurrency", "must be >= 1");
  if (const char* k = std::getenv(config_.api_key_env.c_str())) api_key_ = k;
  if (!config_.cache_dir.empty()) std::filesystem::create_directories(config_.cache_dir);
}

ChatClient::~ChatClient() = default;

std::string ChatClient::request_body(const ChatRequest& r) const {
  nlohmann::ordered_json j;
  j["model"] = config_.model;
  j["messages"] = nlohmann::ordered_json::array();
  for (const auto& m : r.messages) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  j["temperature"] = r.temperature;
  j["top_p"] = r.top_p;
  j["max_tokens"] = r.max_tokens;
  if (r.seed) j["seed"] = *r.seed;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ChatClient::cache_key(const ChatRequest& r) const { return stable_hash(config_.base_url + "\n" + request_body(r)); }

ChatResult ChatClient::send(void* handle, const ChatRequest& request) {
  CURL* curl = static_cast<CURL*>(handle);
  ChatResult res;
  std::string body = request_body(request);
  std::string url = config_.base_url + "/chat/completions";
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(config_.backoff_s * double(1 << std::min(attempt - 1, 10))));
    std::string response;
    curl_easy_reset(curl);
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    std::string auth = "Authorization: Bearer " + api_key_;
    if (!api_key_.empty()) headers = curl_slist_append(headers, auth.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, long(body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(config_.timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    ++res.attempts;
    if (rc != CURLE_OK) {
      res.error = curl_easy_strerror(rc);
      continue;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res.http_status);
    if (res.http_status != 200) {
      res.error = "HTTP " + std::to_string(res.http_status) + ": " + response.substr(0, 200);
      res.error_code.clear();
      try {
        const auto j = nlohmann::json::parse(response);
        if (j.at("error").at("code").is_string()) res.error_code = j["error"]["code"].get<std::string>();
      } catch (const std::exception&) {
        // Not OpenAI's error shape: no code.
      }
      if (retryable(res.http_status)) continue;
      return res;
    }
    try {
      auto j = nlohmann::json::parse(response);
      const auto& message = j.at("choices").at(0).at("message");
      const auto& content = message.at("content");
      res.content = content.is_string() ? content.get<std::string>() : "";
      // Reasoning models' servers (DeepSeek's, vLLM's) send the thinking beside the answer.
      for (const char* key : {"reasoning_content", "reasoning"})
        if (message.contains(key) && message[key].is_string() && res.reasoning.empty())
          res.reasoning = message[key].get<std::string>();
      res.ok = true;
      res.error.clear();
      return res;
    } catch (const std::exception& e) {
      // Garbage with a 200 (a proxy's error page, a cut-off body) is retried like a 5xx.
      res.error = std::string("malformed response: ") + e.what();
      continue;
    }
  }
  return res;
}

ChatResult ChatClient::complete(const ChatRequest& request) {
  std::string cache_file;
  if (!config_.cache_dir.empty()) {
    cache_file = config_.cache_dir + "/" + cache_key(request) + ".json";
    if (std::filesystem::exists(cache_file)) {
      try {
        auto j = nlohmann::json::parse(read_file(cache_file));
        ChatResult r;
        r.ok = true;
        r.from_cache = true;
        r.http_status = 200;
        r.content = j.at("content").get<std::string>();
        r.reasoning = j.value("reasoning", std::string());
        return r;
      } catch (const std::exception&) {
        // A damaged entry is asked for again and overwritten.
      }
    }
  }
  CURL* curl = curl_easy_init();
  if (!curl) return {false, "", "curl_easy_init failed", 0, 0, false, ""};
  ChatResult r = send(curl, request);
  curl_easy_cleanup(curl);
  if (r.ok && !cache_file.empty()) {
    nlohmann::json j = {{"content", r.content}, {"request", nlohmann::json::parse(request_body(request))}};
    if (!r.reasoning.empty()) j["reasoning"] = r.reasoning;
    write_file_atomic(cache_file, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return r;
}

std::vector<ChatResult> ChatClient::complete_all(const std::vector<ChatRequest>& requests,
                                                 const std::function<void(size_t, const ChatResult&)>& done) {
  std::vector<ChatResult> results(requests.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < requests.size();) {
      results[k] = complete(requests[k]);
      if (done) done(k, results[k]);
    }
  };
  int n = std::max(1, std::min(config_.concurrency, int(requests.size())));
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace trex::chat
