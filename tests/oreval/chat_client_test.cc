// The OpenAI-compatible client against a fake server on loopback, started here (cpp-httplib):
// retries, concurrency bound, cache and resume, and `trex eval gen` end to end.
#include "trex/oreval/chat_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "nlohmann/json.hpp"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

// Answers "echo: <last user message>". A message containing "fail-once" gets a 503 the first
// time, "always-400" always gets a 400, "slow" waits 50 ms. Requests must carry the key.
class FakeServer {
 public:
  FakeServer() {
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
      } else if (content.find("fail-once") != std::string::npos && first_time(content)) {
        res.status = 503;
      } else {
        if (content.find("slow") != std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        nlohmann::json out = {{"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "echo: " + content}}}}}}};
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
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> in_flight_{0}, requests_{0};
  int max_in_flight_ = 0;
  std::mutex mu_;
  std::set<std::string> seen_;
  std::vector<std::string> bodies_;
};

ChatConfig config(const FakeServer& s, const std::string& cache = "") {
  setenv("TREX_TEST_KEY", "sekrit", 1);
  ChatConfig c;
  c.base_url = s.url();
  c.model = "fake";
  c.api_key_env = "TREX_TEST_KEY";
  c.backoff_s = 0.01;
  c.max_retries = 3;
  c.timeout_s = 10;
  c.cache_dir = cache;
  return c;
}

ChatRequest ask(const std::string& text) {
  ChatRequest r;
  r.messages = {{"system", "be brief"}, {"user", text}};
  return r;
}

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag) {
    path = (fs::temp_directory_path() / ("trex_chat_" + tag + "_" + std::to_string(getpid()))).string();
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(ChatClient, RetriesTransientErrorsOnly) {
  FakeServer s;
  ChatClient c(config(s));
  ChatResult ok = c.complete(ask("fail-once please"));
  EXPECT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(ok.attempts, 2);
  EXPECT_EQ(ok.content, "echo: fail-once please");
  ChatResult bad = c.complete(ask("always-400"));
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.attempts, 1);
  EXPECT_EQ(bad.http_status, 400);
  ChatConfig nokey = config(s);
  nokey.api_key_env = "TREX_TEST_NO_SUCH_KEY";
  ChatResult unauthorized = ChatClient(nokey).complete(ask("hello"));
  EXPECT_FALSE(unauthorized.ok);
  EXPECT_EQ(unauthorized.http_status, 401);
  ChatConfig dead = config(s);
  dead.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  ChatResult refused = ChatClient(dead).complete(ask("hello"));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.attempts, 4);  // first try and three retries
}

TEST(ChatClient, ConcurrencyIsBounded) {
  FakeServer s;
  ChatConfig cfg = config(s);
  cfg.concurrency = 3;
  ChatClient c(cfg);
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(ask("slow " + std::to_string(i)));
  std::vector<ChatResult> out = c.complete_all(reqs);
  ASSERT_EQ(out.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[size_t(i)].content, "echo: slow " + std::to_string(i));  // input order
  EXPECT_LE(s.max_in_flight(), 3);
  EXPECT_GE(s.max_in_flight(), 2);
}

TEST(ChatClient, CacheResumesAfterInterruption) {
  FakeServer s;
  TempDir d("cache");
  ChatClient c(config(s, d.path));
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(ask("q" + std::to_string(i)));
  c.complete_all(reqs);
  EXPECT_EQ(s.requests(), 5);
  std::vector<ChatResult> again = c.complete_all(reqs);
  EXPECT_EQ(s.requests(), 5);
  for (const auto& r : again) EXPECT_TRUE(r.from_cache);
  fs::remove(d.path + "/" + c.cache_key(reqs[2]) + ".json");  // as if interrupted before it
  write_file_atomic(d.path + "/" + c.cache_key(reqs[3]) + ".json", "{trunc");  // damaged entry
  std::vector<ChatResult> resumed = c.complete_all(reqs);
  EXPECT_EQ(s.requests(), 7);
  EXPECT_FALSE(resumed[2].from_cache);
  EXPECT_EQ(resumed[3].content, "echo: q3");
  ChatRequest seeded = ask("q0");
  seeded.seed = 5;
  EXPECT_NE(c.cache_key(seeded), c.cache_key(reqs[0]));
}

TEST(ChatClient, EvalGenEndToEnd) {
  FakeServer s;
  TempDir d("gen");
  setenv("TREX_TEST_KEY", "sekrit", 1);
  write_file_atomic(d.path + "/bench.jsonl",
                    "{\"id\":\"a\",\"question\":\"Maximize profit from chairs and tables with wood limits\",\"answer\":1}\n"
                    "{\"id\":\"b\",\"question\":\"Maximize profit from tables and desks with wood limits\",\"answer\":2}\n"
                    "{\"id\":\"c\",\"question\":\"Minimize shipping cost between warehouses and stores\",\"answer\":3}\n");
  std::vector<std::string> argv = {TREX_BINARY, "eval", "gen", "--bench", d.path + "/bench.jsonl", "--id-field", "id",
                                   "--endpoint", s.url(), "--model", "fake", "--api-key-env", "TREX_TEST_KEY",
                                   "--out", d.path + "/out", "--shots", "1", "--samples", "2", "--seed", "7", "--quiet"};
  ProcessOptions po;
  po.timeout_s = 60;
  ProcessResult r = run_process(argv, po);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("6 requests, 6 answered (0 from the cache), 0 failed"), std::string::npos) << r.out;
  EXPECT_EQ(s.requests(), 6);
  std::string lines = read_file(d.path + "/out/completions.jsonl");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 6);
  for (const std::string& body : s.bodies()) {
    auto j = nlohmann::json::parse(body);
    std::string user = j["messages"].back()["content"];
    EXPECT_EQ(j["model"], "fake");
    EXPECT_TRUE(j["seed"] == 7 || j["seed"] == 8) << j["seed"];
    // The one example is the most similar other item, never the item itself.
    if (user.find("Problem:\nMaximize profit from chairs") != std::string::npos) {
      EXPECT_NE(user.find("Question:\nMaximize profit from tables and desks"), std::string::npos) << user;
      EXPECT_EQ(user.find("Question:\nMaximize profit from chairs"), std::string::npos) << user;
    }
  }
  ProcessResult again = run_process(argv, po);
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("6 answered (6 from the cache)"), std::string::npos) << again.out;
  EXPECT_EQ(s.requests(), 6);
}

}  // namespace
}  // namespace trex::oreval
