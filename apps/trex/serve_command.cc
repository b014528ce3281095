// trex serve --ckpt DIR [--host 127.0.0.1] [--port 8000]: an OpenAI-compatible HTTP server over
// a checkpoint (serve/server.h), generating with continuous batching (serve/engine.h).
//
// SIGTERM or SIGINT drains: new generation requests get 503, running ones finish, then the
// server exits 0. The signal handler only records the signal (async-signal-safe) and runs in a
// watcher thread (the others block the signals), which then drains; no work runs in a handler.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/serve/engine.h"
#include "trex/serve/server.h"
#include "trex/train/inference_checkpoint.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

// The termination signal received (0: none yet).
volatile std::sig_atomic_t g_signal = 0;

struct ServeArgs {
  std::string ckpt;
  std::string model_config;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string name;
  std::string api_key;
  std::string api_key_env = "TREX_API_KEY";
  int slots = 8;
  int queue = 64;
  int64_t context = 0;
  int64_t max_tokens = 4096;
  size_t max_request_bytes = 1 << 20;
  int stream_interval = 4;
  int prefill_chunk = 64;
};

int run_serve(const ServeArgs& a) {
  // The termination signals are blocked in every thread started from here on but the watcher
  // below, so the handler interrupts no HTTP, engine or kernel thread in a system call.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  if (a.slots < 1 || a.slots > 256) throw InputError::field("--slots", "must be in [1, 256]");
  if (a.queue < 0) throw InputError::field("--queue", "must be at least 0");
  if (a.max_tokens < 1) throw InputError::field("--max-tokens", "must be at least 1");
  // Checked here too (the Server checks it again) so a bad value fails before the checkpoint loads.
  if (a.stream_interval < 1 || a.stream_interval > serve::kMaxStreamInterval)
    throw InputError::field("--stream-interval", "must be in [1, " + std::to_string(serve::kMaxStreamInterval) +
                                                     "], got " + std::to_string(a.stream_interval));
  if (a.prefill_chunk < 0 || a.prefill_chunk > 256)
    throw InputError::field("--prefill-chunk", "must be in [0, 256], got " + std::to_string(a.prefill_chunk));
  train::InferenceCheckpoint ck = train::load_inference_checkpoint(a.ckpt, a.model_config);
  serve::EngineOptions eo;
  eo.slots = a.slots;
  eo.queue_limit = a.queue;
  eo.context = a.context;
  eo.prefill_chunk = a.prefill_chunk;
  serve::Engine engine(*ck.model, ck.weights, eo);
  serve::ServerOptions so;
  so.host = a.host;
  so.port = a.port;
  so.model_name = a.name.empty() ? ck.name : a.name;
  so.api_key = a.api_key;
  if (so.api_key.empty() && !a.api_key_env.empty())
    if (const char* k = std::getenv(a.api_key_env.c_str())) so.api_key = k;
  so.max_tokens_cap = a.max_tokens;
  so.max_request_bytes = a.max_request_bytes;
  so.http_threads = a.slots + a.queue + 8;
  so.stream_interval = a.stream_interval;
  serve::Server server(engine, *ck.tok, so);
  server.bind();
  std::printf("trex serve: %s (%s) on http://%s:%d/v1, %d slots, context %lld tokens%s\n",
              so.model_name.c_str(), ck.dir.c_str(), a.host.c_str(), server.port(), a.slots,
              static_cast<long long>(engine.context()), so.api_key.empty() ? "" : ", API key required");
  std::fflush(stdout);

  struct sigaction sa {};
  sa.sa_handler = [](int sig) { g_signal = sig; };
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::atomic<bool> listening{true};
  std::thread waiter([&] {
    pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
    while (listening) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const int sig = g_signal;
      if (sig != SIGTERM && sig != SIGINT) continue;
      std::fprintf(stderr, "trex serve: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      server.drain();
      engine.drain();
      server.stop();
      return;
    }
  });
  server.listen();
  // listen() returned: the waiter stopped it, or the socket failed; either way the waiter ends.
  listening = false;
  waiter.join();
  const serve::EngineStats st = engine.stats();
  std::fprintf(stderr, "trex serve: stopped after %lld generated tokens in %lld steps\n",
               static_cast<long long>(st.tokens), static_cast<long long>(st.steps));
  return 0;
}

void add_serve(CLI::App& app, Action* action) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server over a checkpoint (continuous batching)");
  cmd->add_option("--ckpt", args->ckpt, "Checkpoint directory, or a run directory (its newest)")->required();
  cmd->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", args->port, "Port (0: any free port, printed)")->capture_default_str();
  cmd->add_option("--name", args->name, "Model id clients use (default: the model config's name)");
  cmd->add_option("--api-key", args->api_key, "Require Authorization: Bearer KEY (or set $TREX_API_KEY)");
  cmd->add_option("--slots", args->slots, "Sequences decoded together")->capture_default_str();
  cmd->add_option("--queue", args->queue, "Requests that may wait for a slot before 429")->capture_default_str();
  cmd->add_option("--context", args->context, "Prompt + completion tokens at most (0: the model's train_seq_len)")->capture_default_str();
  cmd->add_option("--max-tokens", args->max_tokens, "Cap on a request's max_tokens")->capture_default_str();
  cmd->add_option("--max-request-bytes", args->max_request_bytes, "Larger request bodies get 413")->capture_default_str();
  cmd->add_option("--stream-interval", args->stream_interval,
                  "Tokens per streamed chunk after the first, 1..64 (1: a chunk per token)")->capture_default_str();
  cmd->add_option("--prefill-chunk", args->prefill_chunk,
                  "Prompt tokens a step for prompts over 64 tokens, read beside the running streams "
                  "(0: prefilled whole on admission, every stream waiting)")->capture_default_str();
  cmd->add_option("--model-config", args->model_config, "Model TOML, when the run's train config has moved");
  cmd->callback([args, action] { *action = [args] { return run_serve(*args); }; });
}

const CommandRegistration kServeRegistration(95, add_serve);

}  // namespace

}  // namespace trex::cli
