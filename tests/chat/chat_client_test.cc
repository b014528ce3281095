// The OpenAI-compatible client against a fake server on loopback, started here (cpp-httplib):
// retries (garbage included), concurrency bound, cache and resume, reasoning kept.
#include "trex/chat/chat_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "chat/fake_chat_server.h"
#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/util/atomic_file.h"
#include "trex/util/subprocess.h"

namespace trex::chat {
namespace {

namespace fs = std::filesystem;

using test_util::FakeServer;

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

using test_util::TempDir;

TEST(ChatClient, RetriesTransientErrorsOnly) {
  FakeServer s;
  ChatClient c(config(s));
  ChatResult ok = c.complete(ask("fail-once please"));
  EXPECT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(ok.attempts, 2);
  EXPECT_EQ(ok.content, "echo: fail-once please");
  // A 200 whose body is not a chat completion is retried too.
  ChatResult garbage = c.complete(ask("garbage-once please"));
  EXPECT_TRUE(garbage.ok) << garbage.error;
  EXPECT_EQ(garbage.attempts, 2);
  EXPECT_EQ(garbage.content, "echo: garbage-once please");
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

TEST(ChatClient, ReasoningIsKeptAndCached) {
  FakeServer s;
  TempDir d("reasoning");
  ChatClient c(config(s, d.path));
  ChatResult fresh = c.complete(ask("think-aloud"));
  ASSERT_TRUE(fresh.ok) << fresh.error;
  EXPECT_EQ(fresh.reasoning, "thinking about think-aloud");
  ChatResult cached = c.complete(ask("think-aloud"));
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.reasoning, fresh.reasoning);
  EXPECT_TRUE(c.complete(ask("plain")).reasoning.empty());
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

}  // namespace
}  // namespace trex::chat
