// trex serve's HTTP API, in-process on a loopback port, spoken to by a real HTTP client
// (cpp-httplib): the OpenAI endpoints whole and streamed, what they compute checked against the
// generator and the model, and every error in OpenAI's shape.
#include "trex/serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "model/tiny_checkpoint.h"
#include "nlohmann/json.hpp"
#include "trex/model/config.h"
#include "trex/model/generator.h"
#include "trex/model/transformer.h"
#include "trex/train/chat_template.h"
#include "trex/train/inference_checkpoint.h"
#include "trex/train/number_slots.h"
#include "trex/util/error.h"

namespace trex::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path* g_dir = nullptr;

class ServeApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = new fs::path(fs::temp_directory_path() / ("trex-serve-test-" + std::to_string(::getpid())));
    test_util::write_tiny_checkpoint(*g_dir);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*g_dir, ec);
    delete g_dir;
  }

  // Starts a server with these engine and server options.
  // `dir`: another folder write_tiny_checkpoint filled (default: the suite's).
  void start(EngineOptions eo = {}, ServerOptions so = {}, const fs::path* dir = nullptr) {
    const fs::path& d = dir ? *dir : *g_dir;
    ck_ = train::load_inference_checkpoint((d / "ckpt").string(), (d / "model.toml").string());
    engine_ = std::make_unique<Engine>(*ck_.model, ck_.weights, eo);
    so.port = 0;
    so.model_name = "tiny";
    server_ = std::make_unique<Server>(*engine_, *ck_.tok, so);
    server_->bind();
    thread_ = std::thread([this] { server_->listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(60, 0);
    for (int i = 0; i < 200 && !client_->Get("/health"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    engine_.reset();
  }

  json post(const std::string& path, const json& body, int* status = nullptr) {
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    if (status) *status = r->status;
    return json::parse(r->body);
  }

  // The greedy completion of a chat prompt by a lone generator.
  std::string greedy_alone(const std::string& user, int64_t max_tokens) {
    model::Generator gen(*ck_.model);
    gen.load_routing_state(ck_.weights);
    model::SamplingOptions o;
    o.max_tokens = max_tokens;
    o.stop_ids = {ck_.tok->eos_id(), ck_.tok->end_id()};
    o.vocab_limit = ck_.tok->vocab_size();
    return ck_.tok->decode(gen.generate(train::render_prompt({{train::Role::kUser, user}}, *ck_.tok), o));
  }

  // A POST whose response body is handed to `receive` as it arrives (false: hang up).
  static void post_streaming(httplib::Client& c, const std::string& path, const json& body,
                             std::function<bool(const char*, size_t)> receive) {
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [receive](const char* data, size_t n, uint64_t, uint64_t) {
      return receive(data, n);
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    c.send(req, res, err);
  }

  // Server-sent events of a streamed request: the JSON of each "data:" line, [DONE] as a string.
  std::vector<json> stream(const std::string& path, const json& body) {
    std::string raw;
    post_streaming(*client_, path, body, [&](const char* data, size_t n) {
      raw.append(data, n);
      return true;
    });
    std::vector<json> events;
    size_t at = 0;
    while ((at = raw.find("data: ", at)) != std::string::npos) {
      const size_t end = raw.find("\n\n", at);
      const std::string payload = raw.substr(at + 6, end - at - 6);
      events.push_back(payload == "[DONE]" ? json("[DONE]") : json::parse(payload));
      at = end;
    }
    return events;
  }

  train::InferenceCheckpoint ck_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
};

TEST_F(ServeApi, HealthAndModels) {
  start();
  auto h = client_->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client_->Get("/v1/models");
  ASSERT_TRUE(m);
  json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(j["data"][0]["max_model_len"], 64);
}

// The listening socket queues kListenBacklog connections (cpp-httplib alone queues 5: eight
// clients connecting at once lost connection requests, resent after 1 s). Linux reports a
// listening socket's backlog in TCP_INFO's tcpi_sacked (capped by net.core.somaxconn).
TEST_F(ServeApi, TheListeningSocketQueuesABurstOfConnections) {
  start();
  int backlog = -1, listening = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(e.path().filename().string());
    int accepting = 0;
    socklen_t len = sizeof accepting;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0 || addr.ss_family != AF_INET) continue;
    if (ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port) != server_->port()) continue;
    tcp_info info{};
    socklen_t ilen = sizeof info;
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &ilen), 0);
    backlog = int(info.tcpi_sacked);
    ++listening;
  }
  ASSERT_EQ(listening, 1);
  int somaxconn = kListenBacklog;
  if (FILE* f = std::fopen("/proc/sys/net/core/somaxconn", "r")) {
    if (std::fscanf(f, "%d", &somaxconn) != 1) somaxconn = kListenBacklog;
    std::fclose(f);
  }
  EXPECT_EQ(backlog, std::min(kListenBacklog, somaxconn));
  EXPECT_GE(backlog, 64);
}

TEST_F(ServeApi, ChatCompletionIsTheGreedyCompletionOfTheModel) {
  start();
  int status = 0;
  json r = post("/v1/chat/completions",
                {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "minimize cost"}}}},
                 {"temperature", 0}, {"max_tokens", 8}, {"some_unknown_field", 1}},
                &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], greedy_alone("minimize cost", 8));
  const json& u = r["usage"];
  EXPECT_EQ(u["total_tokens"], u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  EXPECT_LE(u["completion_tokens"].get<int>(), 8);
  if (u["completion_tokens"] == 8) {
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  }
}

// At the default interval (4) and at 1 (a chunk per token, as before the interval): the same
// text. At 1 a chunk still carries every token already decoded when its thread writes, so
// a slow writer may send fewer chunks than tokens; never more.
TEST_F(ServeApi, StreamingGivesTheSameTextThenUsageThenDone) {
  for (const int interval : {4, 1}) {
    SCOPED_TRACE("stream_interval " + std::to_string(interval));
    ServerOptions so;
    so.stream_interval = interval;
    start({}, so);
    const json body = {{"messages", {{{"role", "user"}, {"content", "capacity of the plant"}}}},
                       {"temperature", 0.9}, {"seed", 42}, {"max_tokens", 12}};
    json whole = post("/v1/chat/completions", body);
    json sbody = body;
    sbody["stream"] = true;
    sbody["stream_options"] = {{"include_usage", true}};
    std::vector<json> ev = stream("/v1/chat/completions", sbody);
    ASSERT_GE(ev.size(), 4u);
    EXPECT_EQ(ev.back(), "[DONE]");
    EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
    std::string text;
    std::string finish;
    int64_t chunks = 0;
    for (size_t i = 0; i + 2 < ev.size(); ++i) {
      EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
      const json& c = ev[i]["choices"][0];
      if (c["delta"].contains("content")) {
        text += c["delta"]["content"].get<std::string>();
        chunks += !c["delta"]["content"].get<std::string>().empty();
      }
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
    EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);  // same seed, same tokens
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
    const json& usage = ev[ev.size() - 2];
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"], whole["usage"]);
    EXPECT_GE(chunks, 1);
    EXPECT_LE(chunks, whole["usage"]["completion_tokens"].get<int64_t>());
    TearDown();
  }
}

// --stream-interval 4: the first text at once, then a chunk every four tokens (the stream waits
// up to 200 ms for each token, so only a stall of that length could add a chunk), the same
// text and usage as the whole response.
TEST_F(ServeApi, AStreamIntervalSendsAChunkEveryFewTokensWithTheSameText) {
  ServerOptions so;
  so.stream_interval = 4;
  start({}, so);
  const json body = {{"prompt", "capacity of the plant"}, {"temperature", 0.9}, {"seed", 42}, {"max_tokens", 24}};
  json whole = post("/v1/completions", body);
  const int64_t n = whole["usage"]["completion_tokens"];
  json sbody = body;
  sbody["stream"] = true;
  sbody["stream_options"] = {{"include_usage", true}};
  std::vector<json> ev = stream("/v1/completions", sbody);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  int64_t chunks = 0;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    const std::string piece = ev[i]["choices"][0]["text"];
    chunks += !piece.empty();
    text += piece;
  }
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(ev[ev.size() - 2]["usage"], whole["usage"]);
  ASSERT_GE(n, 9) << "the completion ended too early to see the interval";
  EXPECT_LE(chunks, 1 + (n - 1 + 3) / 4 + 1) << n << " tokens";
  EXPECT_GE(chunks, 1);
  // An interval outside [1, 64] is refused.
  so.stream_interval = 0;
  EXPECT_THROW(Server(*engine_, *ck_.tok, so), InputError);
  so.stream_interval = 65;
  EXPECT_THROW(Server(*engine_, *ck_.tok, so), InputError);
}

// A generation that fails mid-stream at interval 4: the text decoded before the failure (held
// while waiting for the interval's tokens) is sent, then the error. The engine's sixth batched
// step throws, after the prefill's token and five steps' tokens: the same six tokens as a
// request for six tokens with the same seed.
TEST_F(ServeApi, AFailedGenerationSendsTheTextBeforeItThenTheError) {
  ServerOptions so;
  so.stream_interval = 4;
  const json body = {{"prompt", "capacity of the plant"}, {"temperature", 0.9}, {"seed", 42}, {"max_tokens", 6}};
  start({}, so);
  json six = post("/v1/completions", body);
  ASSERT_EQ(six["usage"]["completion_tokens"], 6) << six.dump();
  TearDown();
  EngineOptions eo;
  eo.fail_at_step = 6;
  start(eo, so);
  json sbody = body;
  sbody["max_tokens"] = 24;
  sbody["stream"] = true;
  std::vector<json> ev = stream("/v1/completions", sbody);
  ASSERT_GE(ev.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    ASSERT_TRUE(ev[i].contains("choices")) << ev[i].dump();
    EXPECT_TRUE(ev[i]["choices"][0]["finish_reason"].is_null()) << ev[i].dump();
    text += ev[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, six["choices"][0]["text"]);
  ASSERT_TRUE(ev.back().contains("error")) << ev.back().dump();
  EXPECT_NE(ev.back()["error"]["message"].get<std::string>().find("injected failure"), std::string::npos);
}

TEST_F(ServeApi, SeededChoicesAreReproducibleAndStopStringsCut) {
  start();
  json body = {{"messages", {{{"role", "user"}, {"content", "demand"}}}},
               {"temperature", 1.0}, {"top_p", 0.9}, {"seed", 7}, {"n", 3}, {"max_tokens", 10}};
  json a = post("/v1/chat/completions", body), b = post("/v1/chat/completions", body);
  ASSERT_EQ(a["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(a["choices"][i]["message"]["content"], b["choices"][i]["message"]["content"]);
  // A stop string taken from a completion ends the text before it.
  const std::string full = a["choices"][0]["message"]["content"];
  // One whole character from the middle of the text.
  size_t at = full.size() / 2;
  while (at < full.size() && (static_cast<unsigned char>(full[at]) & 0xC0) == 0x80) ++at;
  size_t end = at + 1;
  while (end < full.size() && (static_cast<unsigned char>(full[end]) & 0xC0) == 0x80) ++end;
  if (at < full.size()) {
    const std::string stop = full.substr(at, end - at);
    body["n"] = 1;
    body["stop"] = stop;
    json c = post("/v1/chat/completions", body);
    EXPECT_EQ(c["choices"][0]["message"]["content"], full.substr(0, full.find(stop)));
    EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  }
}

TEST_F(ServeApi, EchoLogprobsScoreThePromptAsTheModelDoes) {
  start();
  json r = post("/v1/completions", {{"prompt", "minimize cost subject to"}, {"max_tokens", 0},
                                    {"echo", true}, {"logprobs", 2}});
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  const json& lp = r["choices"][0]["logprobs"];
  EXPECT_EQ(r["choices"][0]["text"], "minimize cost subject to");
  // <s> + the prompt's tokens; the first has no logprob.
  std::vector<int32_t> ids = {ck_.tok->bos_id()};
  for (int32_t id : ck_.tok->encode("minimize cost subject to")) ids.push_back(id);
  ASSERT_EQ(lp["token_logprobs"].size(), ids.size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  model::Generator gen(*ck_.model);
  gen.load_routing_state(ck_.weights);
  for (size_t j = 1; j < ids.size(); ++j) {
    // Over the tokenizer's ids, as sampling draws them.
    std::span<const float> logits = gen.step(ids[j - 1]).first(size_t(ck_.tok->vocab_size()));
    double mx = -INFINITY, sum = 0;
    for (size_t v = 0; v < logits.size(); ++v) mx = std::max(mx, double(logits[v]));
    for (size_t v = 0; v < logits.size(); ++v) sum += std::exp(double(logits[v]) - mx);
    EXPECT_NEAR(lp["token_logprobs"][j].get<double>(), double(logits[size_t(ids[j])]) - mx - std::log(sum), 1e-6);
    EXPECT_EQ(lp["top_logprobs"][j].size(), 2u);
  }
  EXPECT_EQ(lp["text_offset"].back(), std::string("minimize cost subject to").size() -
                                          ck_.tok->decode({ids.back()}).size());
}

TEST_F(ServeApi, TokenizeAndDetokenizeRoundTrip) {
  start();
  json t = post("/tokenize", {{"prompt", "plant capacity"}});
  ASSERT_TRUE(t["tokens"].is_array());
  EXPECT_EQ(t["tokens"][0], ck_.tok->bos_id());
  EXPECT_EQ(t["count"], t["tokens"].size());
  json d = post("/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_EQ(d["prompt"], "plant capacity");
  // The same ids as a completions prompt give the same answer as the text.
  json a = post("/v1/completions", {{"prompt", "plant capacity"}, {"temperature", 0}, {"max_tokens", 5}});
  json b = post("/v1/completions", {{"prompt", t["tokens"]}, {"temperature", 0}, {"max_tokens", 5}});
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

TEST_F(ServeApi, ConcurrentRequestsAreBatchedAndAllAnswered) {
  EngineOptions eo;
  eo.slots = 4;
  start(eo);
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(60, 0);
      json body = {{"messages", {{{"role", "user"}, {"content", "plant " + std::to_string(i)}}}},
                   {"seed", i}, {"max_tokens", 20}};
      auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
      if (r && r->status == 200 && json::parse(r->body)["choices"][0]["message"]["content"].is_string()) ++ok;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 6);
  const EngineStats st = engine_->stats();
  EXPECT_GT(st.tokens, 0);
  EXPECT_LT(st.steps, st.tokens);  // some steps carried several sequences
}

TEST_F(ServeApi, ErrorsAreOpenAIShaped) {
  ServerOptions so;
  so.max_request_bytes = 4096;
  start({}, so);
  struct Case {
    std::string path, body;
    int status;
    std::string param;
  };
  const std::string long_prompt(400, 'x');
  std::vector<Case> cases = {
      {"/v1/chat/completions", "{not json", 400, ""},
      {"/v1/chat/completions", R"({"messages": []})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "tool", "content": "x"}]})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", 400, "temperature"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 99})", 400, "n"},
      {"/v1/chat/completions", R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})", 404, "model"},
      {"/v1/completions", json({{"prompt", long_prompt}}).dump(), 400, "prompt"},
      {"/v1/completions", json({{"prompt", std::string(5000, 'y')}}).dump(), 413, ""},
      {"/v1/nothing", "{}", 404, ""},
  };
  for (const Case& c : cases) {
    auto r = client_->Post(c.path.c_str(), c.body, "application/json");
    ASSERT_TRUE(r) << c.path;
    EXPECT_EQ(r->status, c.status) << c.body.substr(0, 80) << " -> " << r->body;
    json j = json::parse(r->body);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    if (!c.param.empty()) {
      EXPECT_EQ(j["error"]["param"], c.param) << r->body;
    }
  }
  json over = json::parse(client_->Post("/v1/completions", json({{"prompt", long_prompt}}).dump(),
                                        "application/json")->body);
  EXPECT_EQ(over["error"]["code"], "context_length_exceeded");
}

TEST_F(ServeApi, ApiKeyIsRequiredWhenSet) {
  ServerOptions so;
  so.api_key = "sk-test";
  start({}, so);
  auto r = client_->Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  client_->set_bearer_token_auth("sk-test");
  r = client_->Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServeApi, AFullQueueAnswers429AndADisconnectedStreamFreesItsSlot) {
  EngineOptions eo;
  eo.slots = 1;
  eo.queue_limit = 0;
  eo.context = 20000;  // a generation long enough to outlast the client
  start(eo);
  // A streaming request holds the only slot; the client reads two events, then hangs up.
  std::atomic<int> chunks{0};
  std::thread holder([&] {
    httplib::Client c("127.0.0.1", server_->port());
    json body = {{"prompt", "a"}, {"max_tokens", 19000}, {"stream", true}, {"temperature", 1.0}, {"seed", 1}};
    post_streaming(c, "/v1/completions", body, [&](const char*, size_t) {
      ++chunks;
      if (chunks == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return chunks < 2;
    });
  });
  // While it streams, another request finds no slot and no queue place.
  while (chunks == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  int status = 0;
  json busy = post("/v1/completions", {{"prompt", "b"}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 429);
  EXPECT_EQ(busy["error"]["code"], "rate_limit_exceeded");
  holder.join();
  // The hung-up stream's slot is freed: a new request is served.
  for (int i = 0; i < 1000 && engine_->stats().running > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  json ok = post("/v1/completions", {{"prompt", "b"}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 200) << ok.dump();
  EXPECT_LT(engine_->stats().tokens, 19000);  // the abandoned request did not run to its end
}

}  // namespace
}  // namespace trex::serve

namespace trex::serve {
namespace {

// Number slots (train/number_slots.h): a checkpoint whose tokenizer has 8 slots gets a chat
// prompt's numbers as slots, and each slot the model writes comes back as the request's number;
// a lone generator with the same seed writes the same tokens (the slots spelled). At temperature 2
// the untrained model draws slot pieces often. 24 tokens: prompt and completion stay inside the
// tiny model's context of 64. With one number in the prompt, slots 2..8 are never drawn (they
// could not be filled: before, such a completion was a 422 number_slot_unfilled), though the
// same generator without that mask writes one.
TEST_F(ServeApi, NumberSlotsAreFilledWithTheRequestsNumbersAndUnfillableOnesAreNeverDrawn) {
  const fs::path dir = *g_dir / "slots";
  test_util::write_tiny_checkpoint(dir, true, 8);
  start({}, {}, &dir);
  ASSERT_EQ(ck_.tok->number_slot_count(), 8);
  const std::string all = "capacity 11 12 13 14 15 16 17 and 18.5 of the plant";
  const std::vector<std::string> numbers = {"11", "12", "13", "14", "15", "16", "17", "18.5"};
  // The completion of a lone generator, slots spelled; `masked`: with the server's exclusions.
  auto alone = [&](const std::string& user, int seed, bool masked = true) {
    model::Generator gen(*ck_.model);
    gen.load_routing_state(ck_.weights);
    model::SamplingOptions o;
    o.max_tokens = 24;
    o.temperature = 2;
    o.seed = uint64_t(seed);
    o.stop_ids = {ck_.tok->eos_id(), ck_.tok->end_id()};
    o.vocab_limit = ck_.tok->vocab_size();
    std::vector<std::string> found;
    const std::vector<int32_t> prompt = train::render_prompt({{train::Role::kUser, user}}, *ck_.tok, &found);
    if (user == all) EXPECT_EQ(found, numbers);  // the 8-number prompt's slots, in order
    if (masked) o.excluded_ids = train::unfillable_slot_ids(*ck_.tok, found.size());
    return ck_.tok->decode(gen.generate(prompt, o));
  };
  EXPECT_TRUE(train::unfillable_slot_ids(*ck_.tok, numbers.size()).empty());
  int with_slots = 0;
  for (int seed = 0; seed < 6; ++seed) {
    json body = {{"messages", {{{"role", "user"}, {"content", all}}}}, {"temperature", 2}, {"seed", seed},
                 {"max_tokens", 24}};
    int status = 0;
    json r = post("/v1/chat/completions", body, &status);
    ASSERT_EQ(status, 200) << r.dump();
    const std::string spelled = alone(all, seed);
    const std::string content = r["choices"][0]["message"]["content"];
    with_slots += spelled.find("<n_") != std::string::npos;
    EXPECT_EQ(content, train::from_slots(spelled, numbers));
    // Streamed: the same text, the slots filled across chunks.
    body["stream"] = true;
    std::string streamed;
    for (const json& e : stream("/v1/chat/completions", body))
      if (e.is_object() && e["choices"][0]["delta"].contains("content"))
        streamed += e["choices"][0]["delta"]["content"].get<std::string>();
    EXPECT_EQ(streamed, content);
  }
  EXPECT_GE(with_slots, 2);
  const std::string one = "capacity 11 of the plant";
  ASSERT_EQ(train::unfillable_slot_ids(*ck_.tok, 1).size(), 7u);
  int unmasked_unfillable = 0;
  for (int seed = 0; seed < 10; ++seed) {
    int status = 0;
    json r = post("/v1/chat/completions",
                  {{"messages", {{{"role", "user"}, {"content", one}}}}, {"temperature", 2}, {"seed", seed},
                   {"max_tokens", 24}},
                  &status);
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["choices"][0]["message"]["content"], train::from_slots(alone(one, seed), {"11"}));
    const std::string unmasked = alone(one, seed, false);
    for (int k = 2; k <= 8; ++k) unmasked_unfillable += unmasked.find(train::slot_piece(k)) != std::string::npos;
  }
  EXPECT_GE(unmasked_unfillable, 1);
}

// A model whose slot logits are forced far above every other token's
// (write_tiny_checkpoint's slot_logit_scale): without the mask it writes a slot the prompt has no
// number for at nearly every step; served, greedy and sampled, whole and streamed, with 1 and 3
// numbers in the prompt, no completion has one (every request 200, no 422), the slots it can fill
// still come back as the prompt's numbers, and each answer is the masked lone generator's.
TEST_F(ServeApi, ForcedSlotLogitsNeverGiveAnUnfillableSlot) {
  const fs::path dir = *g_dir / "forced-slots";
  test_util::write_tiny_checkpoint(dir, true, 8, 50.f);
  start({}, {}, &dir);
  struct Case {
    std::string user;
    std::vector<std::string> numbers;
  };
  const std::vector<Case> cases = {{"capacity 11 of the plant", {"11"}},
                                   {"capacity 11 of the plant and 7 of the market at 2.5", {"11", "7", "2.5"}}};
  int unmasked_unfillable = 0, filled = 0;
  for (const Case& c : cases) {
    std::vector<std::string> found;
    const std::vector<int32_t> prompt = train::render_prompt({{train::Role::kUser, c.user}}, *ck_.tok, &found);
    ASSERT_EQ(found, c.numbers);
    const std::vector<int32_t> unfillable = train::unfillable_slot_ids(*ck_.tok, found.size());
    ASSERT_EQ(unfillable.size(), 8 - found.size());
    for (double temperature : {0.0, 1.0}) {
      for (int seed = 0; seed < (temperature > 0 ? 3 : 1); ++seed) {
        auto lone = [&](bool masked) {
          model::Generator gen(*ck_.model);
          gen.load_routing_state(ck_.weights);
          model::SamplingOptions o;
          o.max_tokens = 16;
          o.temperature = temperature;
          o.seed = uint64_t(seed);
          o.stop_ids = {ck_.tok->eos_id(), ck_.tok->end_id()};
          o.vocab_limit = ck_.tok->vocab_size();
          if (masked) o.excluded_ids = unfillable;
          return gen.generate(prompt, o);
        };
        const std::vector<int32_t> masked = lone(true), unmasked = lone(false);
        for (int32_t id : unmasked)
          unmasked_unfillable += std::find(unfillable.begin(), unfillable.end(), id) != unfillable.end();
        for (int32_t id : masked)
          ASSERT_EQ(std::find(unfillable.begin(), unfillable.end(), id), unfillable.end()) << c.user;
        const std::string expected = train::from_slots(ck_.tok->decode(masked), c.numbers);
        filled += ck_.tok->decode(masked).find("<n_") != std::string::npos;
        json body = {{"messages", {{{"role", "user"}, {"content", c.user}}}}, {"temperature", temperature},
                     {"seed", seed}, {"max_tokens", 16}};
        int status = 0;
        json r = post("/v1/chat/completions", body, &status);
        ASSERT_EQ(status, 200) << c.user << " T " << temperature << " seed " << seed << ": " << r.dump();
        EXPECT_EQ(r["choices"][0]["message"]["content"], expected) << c.user << " T " << temperature;
        body["stream"] = true;
        std::string streamed;
        for (const json& e : stream("/v1/chat/completions", body)) {
          ASSERT_FALSE(e.is_object() && e.contains("error")) << e.dump();
          if (e.is_object() && !e["choices"].empty() && e["choices"][0]["delta"].contains("content"))
            streamed += e["choices"][0]["delta"]["content"].get<std::string>();
        }
        EXPECT_EQ(streamed, expected) << c.user << " T " << temperature;
      }
    }
  }
  // The forcing works (8 requests of 16 tokens: most unmasked tokens are unfillable slots), and
  // the mask leaves the fillable slots alone.
  EXPECT_GE(unmasked_unfillable, 8 * 16 / 2);
  EXPECT_GE(filled, 1);
}

// Rewrites the weights of a checkpoint write_tiny_checkpoint made so that, greedy, the model
// answers any chat prompt with the tokens of `chain` after <|assistant|>, then <|end|>: a bigram
// built by hand. Each token of the chain (distinct) gets an embedding of 1000 on a hidden
// dimension of its own, far above what attention and the MoE add (their inputs are
// RMS-normalised), and mHC mixes the streams with positive weights, so the head's normalised
// input points along that dimension; the next token's head row is 20 on it (a logit of ~110
// against the rest's ~0.1).
void force_chain(const fs::path& dir, const train::Tokenizer& tok, std::vector<int32_t> chain) {
  const model::ModelConfig c = model::load_model_config((dir / "model.toml").string());
  model::Transformer m(c, 0, false);
  const std::string weights = (dir / "ckpt" / "model.safetensors").string();
  m.load(weights);
  chain.insert(chain.begin(), tok.role_id(train::Role::kAssistant));
  chain.push_back(tok.end_id());
  ASSERT_LE(chain.size(), size_t(c.hidden));
  float* embed = m.params() + m.layout().offset_of("embed");
  float* head = m.params() + m.layout().offset_of("head");
  for (size_t k = 0; k < chain.size(); ++k) {
    float* e = embed + int64_t(chain[k]) * c.hidden;
    std::fill(e, e + c.hidden, 0.f);
    e[k] = 1000.f;
    if (k == 0) continue;
    float* h = head + int64_t(chain[k]) * c.hidden;
    std::fill(h, h + c.hidden, 0.f);
    h[k - 1] = 20.f;
  }
  m.save(weights);
}

// Stop strings are matched against the text the client gets, with the slots filled in (review
// rslots MEDIUM 1; before, against the slots' spellings): a model that answers "<n_5>" by one
// slot token, prompted with five numbers, says "15"; a stop string "15" stops it before that
// (an empty answer, finish_reason "stop"), whole and streamed, and a stop string "<n_" never
// fires. The slot token is the model's only way to "15" here, so the stop can only fire on it.
TEST_F(ServeApi, StopStringsAreMatchedOnTheTextWithTheSlotsFilled) {
  const fs::path dir = *g_dir / "slot-stop";
  test_util::write_tiny_checkpoint(dir, true, 8);
  const train::Tokenizer tok = train::Tokenizer::load((dir / "ckpt" / "tokenizer.model").string());
  const std::vector<int32_t> slot5 = tok.encode("<n_5>");
  ASSERT_EQ(slot5.size(), 1u);
  force_chain(dir, tok, {slot5[0]});
  start({}, {}, &dir);
  const std::string user = "capacity 11 12 13 14 15 of the plant";
  auto ask = [&](const json& stop, bool streamed, std::string* finish) {
    json body = {{"messages", {{{"role", "user"}, {"content", user}}}}, {"temperature", 0}, {"max_tokens", 8}};
    if (!stop.is_null()) body["stop"] = stop;
    if (!streamed) {
      int status = 0;
      json r = post("/v1/chat/completions", body, &status);
      EXPECT_EQ(status, 200) << r.dump();
      *finish = r["choices"][0]["finish_reason"];
      return r["choices"][0]["message"]["content"].get<std::string>();
    }
    body["stream"] = true;
    std::string text;
    for (const json& e : stream("/v1/chat/completions", body)) {
      if (!e.is_object()) continue;
      EXPECT_FALSE(e.contains("error")) << e.dump();
      if (e["choices"].empty()) continue;
      const json& ch = e["choices"][0];
      if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
      if (!ch["finish_reason"].is_null()) *finish = ch["finish_reason"];
    }
    return text;
  };
  for (bool streamed : {false, true}) {
    std::string finish;
    EXPECT_EQ(ask(nullptr, streamed, &finish), "15") << streamed;
    EXPECT_EQ(finish, "stop");  // at <|end|>
    EXPECT_EQ(ask("15", streamed, &finish), "") << streamed;
    EXPECT_EQ(finish, "stop");
    EXPECT_EQ(ask(json::array({"<n_", "<n_5>"}), streamed, &finish), "15") << streamed;
    EXPECT_EQ(ask(json::array({"x", "5"}), streamed, &finish), "1") << streamed;
  }
}

// A slot past the prompt's numbers can still reach the text spelled piece by piece ("<", "n",
// "_", "5", ">"), which no mask of slot tokens stops: whole, the answer is a 422
// number_slot_unfilled; streamed (review rslots LOW 6), the stream's last event is that error, in
// OpenAI's shape, after the role chunk and without any of the spelled text or [DONE]. With five
// numbers in the prompt the same spelling is slot 5 and comes back as "15".
TEST_F(ServeApi, ASpelledSlotWithNoNumberIs422WholeAndStreamed) {
  const fs::path dir = *g_dir / "spelled-slot";
  test_util::write_tiny_checkpoint(dir, true, 8);
  const train::Tokenizer tok = train::Tokenizer::load((dir / "ckpt" / "tokenizer.model").string());
  std::vector<int32_t> chain;
  for (char ch : std::string("<n_5>")) {
    const std::vector<int32_t> ids = tok.encode(std::string(1, ch));
    ASSERT_EQ(ids.size(), 1u) << ch;
    chain.push_back(ids[0]);
  }
  force_chain(dir, tok, chain);
  start({}, {}, &dir);
  auto body = [](const std::string& user) {
    return json{{"messages", {{{"role", "user"}, {"content", user}}}}, {"temperature", 0}, {"max_tokens", 8}};
  };
  int status = 0;
  json ok = post("/v1/chat/completions", body("capacity 11 12 13 14 15 of the plant"), &status);
  ASSERT_EQ(status, 200) << ok.dump();
  EXPECT_EQ(ok["choices"][0]["message"]["content"], "15");
  json r = post("/v1/chat/completions", body("capacity 11 of the plant"), &status);
  ASSERT_EQ(status, 422) << r.dump();
  EXPECT_EQ(r["error"]["code"], "number_slot_unfilled");
  EXPECT_EQ(r["error"]["type"], "invalid_response_error");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("<n_5>, but the prompt has 1 number"), std::string::npos)
      << r.dump();
  for (int interval : {1, 4}) {
    TearDown();
    ServerOptions so;
    so.stream_interval = interval;
    start({}, so, &dir);
    json b = body("capacity 11 of the plant");
    b["stream"] = true;
    const std::vector<json> events = stream("/v1/chat/completions", b);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
    const json& last = events.back();
    ASSERT_TRUE(last.is_object() && last.contains("error")) << last.dump();
    EXPECT_EQ(last["error"]["code"], "number_slot_unfilled");
    EXPECT_NE(last["error"]["message"].get<std::string>().find("<n_5>"), std::string::npos) << last.dump();
    for (const json& e : events) {
      ASSERT_TRUE(e.is_object()) << "no [DONE] after the error";
      if (e.contains("choices") && !e["choices"].empty() && e["choices"][0]["delta"].contains("content"))
        EXPECT_EQ(e["choices"][0]["delta"]["content"], "") << e.dump();
    }
  }
}

}  // namespace
}  // namespace trex::serve
