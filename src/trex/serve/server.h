// An OpenAI-compatible HTTP server over a trex checkpoint (cpp-httplib), generating through the
// continuous-batching Engine.
//
//   GET  /health                  200 {"status":"ok"} (503 while draining)
//   GET  /v1/models               the one served model, with its context length
//   POST /v1/chat/completions     messages -> the checkpoint's chat template; temperature, top_p,
//                                 max_tokens | max_completion_tokens, stop, n, seed, logprobs +
//                                 top_logprobs, stream (+ stream_options.include_usage)
//   POST /v1/completions          prompt (a string, [string] or [token ids]), echo, logprobs (0..5)
//                                 so loglikelihood evaluation works; the same sampling fields
//   POST /tokenize, /detokenize   {"prompt"|"messages"} -> {"tokens","count","max_model_len"};
//                                 {"tokens"} -> {"prompt"}
//
// Errors use OpenAI's shape {"error":{"message","type","param","code"}}: 400 for a malformed or
// invalid request (the field named), 401 without the configured API key, 404 for an unknown
// model or path, 413 for a body over the size cap, 429 when the engine's queue is full, 503
// while draining. Unknown request fields are ignored, as OpenAI's servers do. A streaming client
// that disconnects cancels its request, which frees its slot at the next step.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "trex/serve/engine.h"
#include "trex/serve/piece_texts.h"
#include "trex/train/tokenizer.h"

namespace httplib {
class Server;
}

namespace trex::serve {

// Connections the listening socket queues before the server accepts them. cpp-httplib 0.11
// listens with a queue of 5: eight clients connecting at once overflowed it (the kernel drops
// the surplus connection requests, and their clients resend them after 1 s: a first token of
// ~1000 ms, session 18's bench client, 16 ListenOverflows in `nstat`), so bind() widens it.
inline constexpr int kListenBacklog = 1024;

// The largest stream_interval: a chunk carries at most this many tokens' events (server.cc).
inline constexpr int kMaxStreamInterval = 64;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                      // 0: any free port (see port())
  std::string model_name;               // the id clients name in "model"
  std::string api_key;                  // empty: no authentication
  size_t max_request_bytes = 1 << 20;   // larger bodies get 413
  int64_t max_tokens_cap = 4096;        // max_tokens above it is lowered to it
  int max_n = 8;                        // choices per request at most
  int http_threads = 32;                // concurrent connections served
  // A stream's chunks after its first text carry this many tokens, in [1, kMaxStreamInterval]
  // (fewer at the end, or when the next token is over 200 ms away for a request of one choice,
  // over 20 ms for one of several): 1 is a chunk per token. Each chunk costs a wake-up, a JSON
  // chunk and a socket write here and a read and a parse in the client; with eight streams the
  // Python bench client's CPU per token was 46-61 us at 1 against 30-31 us at 4 (adb0c73), and
  // 41-58 against 23-35 at 64 tokens (bench/results/serve_bench.md), on the cores that decode.
  int stream_interval = 4;
};

class Server {
 public:
  // The engine and tokenizer must outlive the server.
  Server(Engine& engine, const train::Tokenizer& tok, ServerOptions options);
  ~Server();

  // Binds the listening socket, its accept queue kListenBacklog connections long. Throws
  // InputError ("--port") when the address is in use or cannot be bound.
  void bind();
  int port() const { return port_; }
  // Serves until stop(). REQUIRES: bind() returned.
  void listen();
  // New generation requests get 503 from now on; returns when every response already begun has
  // been sent to its end (a stream's last event included).
  void drain();
  void stop();

 private:
  void routes();
  Engine& engine_;
  const train::Tokenizer& tok_;
  PieceTexts texts_;  // every id's text, decoded once, for the streams' TextStreams
  ServerOptions o_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, once bind() made it
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int> in_flight_{0};  // generation responses begun and not yet sent
};

}  // namespace trex::serve
