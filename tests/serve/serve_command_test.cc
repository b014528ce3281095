// `trex serve` as a process: it prints where it listens, answers, drains on SIGTERM (a request
// in flight completes, then the process exits 0), and refuses bad input with one line, exit 2.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "model/tiny_checkpoint.h"
#include "serve/serve_process.h"
#include "nlohmann/json.hpp"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServeCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("trex-serve-cmd-test-" + std::to_string(::getpid())));
    test_util::write_tiny_checkpoint(*dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::vector<std::string> base_args() {
    return {TREX_BINARY, "serve", "--ckpt", (*dir_ / "ckpt").string(), "--model-config",
            (*dir_ / "model.toml").string()};
  }
  static fs::path* dir_;
};
fs::path* ServeCommand::dir_ = nullptr;

using test_util::port_of;
using test_util::wait_exit;

TEST_F(ServeCommand, AnswersThenDrainsOnSigterm) {
  std::vector<std::string> args = base_args();
  for (const char* a : {"--port", "0", "--name", "tiny", "--context", "20000"}) args.push_back(a);
  std::string line;
  test_util::ServeProcess c = test_util::spawn_server(args, &line);
  const int port = port_of(line);
  ASSERT_GT(port, 0) << line;
  EXPECT_NE(line.find("tiny"), std::string::npos) << line;
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "tiny");
  // A long streamed request is in flight when SIGTERM arrives: it streams to its end, then the
  // server exits.
  std::atomic<bool> first_chunk{false};
  std::string raw;
  std::thread in_flight([&] {
    httplib::Client c2("127.0.0.1", port);
    c2.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json({{"prompt", "plant"}, {"max_tokens", 15000}, {"temperature", 1.0}, {"seed", 3},
                     {"stream", true}}).dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      raw.append(data, n);
      first_chunk = true;
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    c2.send(req, res, err);
  });
  while (!first_chunk) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(c.pid, SIGTERM);
  // New work is refused while draining (the watcher sees the signal within 50 ms).
  for (int i = 0; i < 200; ++i) {
    auto h = client.Get("/health");
    if (!h || h->status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto late = client.Post("/v1/completions", json({{"prompt", "x"}, {"max_tokens", 1}}).dump(), "application/json");
  if (late) {
    EXPECT_EQ(late->status, 503);
  }
  in_flight.join();
  EXPECT_NE(raw.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(wait_exit(c.pid, 60), 0);
  close(c.out);
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/health"));
}

TEST_F(ServeCommand, BadInputIsOneLineAndExitTwo) {
  // A port already taken.
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(sock, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string taken = std::to_string(ntohs(addr.sin_port));
  struct Case {
    std::vector<std::string> extra;
    std::string names;
    bool base = true;
  };
  std::vector<Case> cases = {
      {{"--port", taken}, "--port"},
      {{"--slots", "0"}, "--slots"},
      {{"serve", "--ckpt", (*dir_ / "nothing").string()}, "--ckpt", false},
      // Checked before the checkpoint loads: the missing checkpoint is not what is reported.
      {{"serve", "--ckpt", (*dir_ / "nothing").string(), "--stream-interval", "65"}, "--stream-interval", false},
      {{"serve", "--ckpt", (*dir_ / "nothing").string(), "--prefill-chunk", "-1"}, "--prefill-chunk", false},
      {{"serve", "--ckpt", (*dir_ / "nothing").string(), "--prefill-chunk", "257"}, "--prefill-chunk", false},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args = k.base ? base_args() : std::vector<std::string>{TREX_BINARY};
    args.insert(args.end(), k.extra.begin(), k.extra.end());
    ProcessOptions o;
    o.timeout_s = 60;
    ProcessResult r = run_process(args, o);
    EXPECT_EQ(r.exit_code, 2) << k.names << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(k.names), std::string::npos) << r.err;
  }
  // The bounds themselves pass the flag's check: the missing checkpoint is what is reported.
  for (const char* chunk : {"0", "256"}) {
    ProcessOptions o;
    o.timeout_s = 60;
    ProcessResult r = run_process(
        {TREX_BINARY, "serve", "--ckpt", (*dir_ / "nothing").string(), "--prefill-chunk", chunk}, o);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--ckpt"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("--prefill-chunk"), std::string::npos) << "--prefill-chunk " << chunk << ": " << r.err;
  }
  close(sock);
}

}  // namespace
}  // namespace trex
