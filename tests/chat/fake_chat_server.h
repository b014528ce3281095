// A fake OpenAI-compatible chat server on loopback (cpp-httplib), for the chat client's tests
// and for the commands that use it (trex eval gen, trex data distil).
#pragma once

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"

namespace trex::test_util {

// Answers "echo: <last user message>", or what `reply` makes of it when given. A message
// containing "fail-once" gets a 503 the first time, "garbage-once" a 200 whose body is not JSON
// the first time, "always-400" always gets a 400, "slow" waits 50 ms, "think-aloud" comes with a
// reasoning_content, "slot-422" always gets trex serve's 422 for a number slot with no number
// (code number_slot_unfilled). Requests must carry the
// key "sekrit".
class FakeServer {
 public:
  explicit FakeServer(std::function<std::string(const std::string&)> reply = {}) : reply_(std::move(reply)) {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      int now = ++in_flight_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        max_in_flight_ = std::max(max_in_flight_, now);
        bodies_.push_back(req.body);
      }
      ++requests_;
      auto j = nlohmann::json::parse(req.body);
      std::string content = j["messages"].back()["content"];
      if (req.get_header_value("Authorization") != "Bearer sekrit") {
        res.status = 401;
      } else if (content.find("always-400") != std::string::npos) {
        res.status = 400;
        res.set_content("{\"error\":\"bad request\"}", "application/json");
      } else if (content.find("slot-422") != std::string::npos) {
        res.status = 422;
        res.set_content("{\"error\":{\"code\":\"number_slot_unfilled\",\"message\":\"the completion writes number "
                        "slot <n_4>, but the prompt has 3 numbers\",\"param\":null,\"type\":\"invalid_response_error\"}}",
                        "application/json");
      } else if (content.find("fail-once") != std::string::npos && first_time(content)) {
        res.status = 503;
      } else if (content.find("garbage-once") != std::string::npos && first_time(content)) {
        res.set_content("<html>502 from a proxy</html>", "text/html");
      } else {
        if (content.find("slow") != std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        nlohmann::json message = {{"role", "assistant"}, {"content", reply_ ? reply_(content) : "echo: " + content}};
        if (content.find("think-aloud") != std::string::npos) message["reasoning_content"] = "thinking about " + content;
        nlohmann::json out = {{"choices", {{{"index", 0}, {"message", message}}}}};
        res.set_content(out.dump(), "application/json");
      }
      --in_flight_;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return requests_; }
  int max_in_flight() const { return max_in_flight_; }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  bool first_time(const std::string& content) {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.insert(content).second;
  }
  std::function<std::string(const std::string&)> reply_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> in_flight_{0}, requests_{0};
  int max_in_flight_ = 0;
  std::mutex mu_;
  std::set<std::string> seen_;
  std::vector<std::string> bodies_;
};

}  // namespace trex::test_util
