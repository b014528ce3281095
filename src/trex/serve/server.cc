// Server: the HTTP routes of server.h, each turning an OpenAI request into engine requests and
// their events back into OpenAI's JSON (whole, or as server-sent events).
#include "trex/serve/server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "nlohmann/json.hpp"
#include "trex/serve/api_request.h"
#include "trex/serve/text_chunk_event.h"
#include "trex/serve/text_stream.h"
#include "trex/train/chat_template.h"
#include "trex/train/number_slots.h"
#include "trex/util/error.h"

namespace trex::serve {

namespace {

using nlohmann::json;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Characters (code points) of a UTF-8 string, as OpenAI's text offsets count them.
int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, error_body(e)); }

// One request's work for the engine: its prompt and the sampling of every choice.
struct Job {
  CompletionRequest req;
  std::vector<int32_t> prompt;
  uint64_t seed = 0;
  int64_t max_tokens = 0;
  std::string id;
  int64_t created = 0;
  std::vector<std::shared_ptr<Generation>> gens;  // one per choice
  // One per choice; with number slots (train/number_slots.h) each fills the slots with the
  // chat prompt's `numbers` before it looks for stop strings.
  std::vector<TextStream> texts;
  std::vector<std::string> finish;                // one per choice, "" while running
  std::vector<std::string> numbers;               // empty when the tokenizer has no slots
  std::vector<std::vector<TokenLogprob>> token_lp;   // per choice, when logprobs are asked
  std::vector<TokenLogprob> prompt_lp;               // echo with logprobs (choice 0's)
  int64_t completion_tokens = 0;
  std::string error;  // a generation's error, set by pump once the text before it is returned
  bool slot_unfilled = false;  // the error is a slot with no number (HTTP 422, not 500)
  std::atomic<int>* in_flight = nullptr;  // the server's count of responses not yet sent
  ~Job() {
    for (auto& g : gens) g->cancel();  // a client gone before the end frees the slots
    if (in_flight) --*in_flight;
  }
};

// Reads events of choice i until it yields text or ends, then whatever more is already there
// (without waiting), at most kCatchUpEvents of them; returns the new text. A stream writes one
// chunk per call: a writer that fell behind the engine catches up in one chunk and one write
// instead of one per token. The bound keeps a chunk coming at least every kCatchUpEvents
// tokens: when the text stream still decoded the whole sequence for every token (its cost
// growing with the text), an unbounded catch-up fell further behind with every token and a
// 19,000-token stream sent its first chunk at its end.
constexpr int kCatchUpEvents = kMaxStreamInterval;

//
// min_tokens > 1 (a stream's interval, once its first text is out): it also waits, up to
// timeout_ms each time, until the call has read that many tokens, so a stream sends a chunk
// every min_tokens tokens instead of every token. With eight clients a chunk per token was one
// wake-up, one JSON chunk and one socket write per token on the server, and as many reads and
// parses in the clients, all on the cores that decode.
//
// A generation error is recorded in job.error, not thrown: the text decoded before it (up to
// min_tokens - 1 tokens' worth while waiting for an interval) is returned first, so a stream
// sends it and then the error (throw_if_failed).
std::string pump(Job& job, size_t i, int timeout_ms, int min_tokens = 1) {
  std::string out;
  if (!job.error.empty()) return out;
  int after_text = 0;  // events read after the first text
  int tokens = 0;
  while (job.finish[i].empty()) {
    if (!out.empty() && after_text++ >= kCatchUpEvents) break;
    const bool wait = out.empty() || tokens < min_tokens;
    // Waiting for an interval's tokens, the engine wakes this thread once they are all there.
    const size_t ready = wait && tokens < min_tokens ? size_t(min_tokens - tokens) : 1;
    std::optional<GenerationEvent> e = job.gens[i]->next(wait ? timeout_ms : 0, ready);
    if (!e) break;
    if (e->kind == GenerationEvent::kPromptLogprobs) {
      if (i == 0) job.prompt_lp = std::move(e->prompt);
    } else if (e->kind == GenerationEvent::kToken) {
      ++job.completion_tokens;
      ++tokens;
      if (job.req.want_logprobs) job.token_lp[i].push_back(e->token);
      try {
        out += job.texts[i].push(e->token.id);
      } catch (const train::NumberSlotError& err) {
        job.error = err.what();
        job.slot_unfilled = true;
        job.gens[i]->cancel();
        break;
      }
      if (job.texts[i].stopped()) {
        job.finish[i] = "stop";
        job.gens[i]->cancel();
      }
    } else {
      if (e->finish_reason == "error") {
        job.error = e->error.empty() ? "unknown error" : e->error;
        break;
      }
      try {
        out += job.texts[i].flush();
      } catch (const train::NumberSlotError& err) {
        job.error = err.what();
        job.slot_unfilled = true;
        break;
      }
      job.finish[i] = e->finish_reason == "cancelled" ? "stop" : e->finish_reason;
    }
  }
  return out;
}

// A completion that writes a slot its prompt has no number for is the model's failure, not the
// server's: 422 number_slot_unfilled, which trex eval gen scores as a failed completion.
void throw_if_failed(const Job& job) {
  if (job.error.empty()) return;
  if (job.slot_unfilled) throw ApiError(422, job.error, "", "invalid_response_error", "number_slot_unfilled");
  throw ApiError(500, "generation failed: " + job.error, "", "server_error");
}

bool all_finished(const Job& job) {
  for (const std::string& f : job.finish)
    if (f.empty()) return false;
  return true;
}

json token_entry(const train::Tokenizer& tok, int32_t id, double lp) {
  const std::string s = tok.decode({id});
  json bytes = json::array();
  for (unsigned char c : s) bytes.push_back(int(c));
  return {{"token", s}, {"logprob", lp}, {"bytes", bytes}};
}

json chat_logprobs(const train::Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& t : lps) {
    json e = token_entry(tok, t.id, t.logprob);
    json top = json::array();
    for (const auto& [id, lp] : t.top) top.push_back(token_entry(tok, id, lp));
    e["top_logprobs"] = top;
    content.push_back(e);
  }
  return {{"content", content}};
}

// The legacy completions logprobs object over the echoed prompt (when echo) and the generated
// tokens, text offsets counted in characters of the returned text.
json completion_logprobs(const train::Tokenizer& tok, const std::vector<int32_t>& prompt,
                         const std::vector<TokenLogprob>& prompt_lp, bool echo,
                         const std::vector<TokenLogprob>& gen) {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(),
       offsets = json::array();
  std::vector<int32_t> so_far;
  auto add = [&](int32_t id, json lp, const std::vector<std::pair<int32_t, double>>& top) {
    offsets.push_back(code_points(tok.decode(so_far)));
    so_far.push_back(id);
    tokens.push_back(tok.decode({id}));
    token_lps.push_back(lp);
    if (lp.is_null()) {
      tops.push_back(nullptr);
    } else {
      json t = json::object();
      for (const auto& [tid, v] : top) t[tok.decode({tid})] = v;
      tops.push_back(t);
    }
  };
  if (echo) {
    for (size_t j = 0; j < prompt.size(); ++j) {
      if (j == 0) {
        add(prompt[0], nullptr, {});
      } else {
        const TokenLogprob& t = prompt_lp[j - 1];
        add(t.id, t.logprob, t.top);
      }
    }
  } else {
    so_far = prompt;  // offsets count from the start of the returned text
  }
  const int64_t base = echo ? 0 : code_points(tok.decode(prompt));
  for (const TokenLogprob& t : gen) {
    offsets.push_back(code_points(tok.decode(so_far)) - base);
    so_far.push_back(t.id);
    tokens.push_back(tok.decode({t.id}));
    token_lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& [tid, v] : t.top) top[tok.decode({tid})] = v;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops},
          {"text_offset", offsets}};
}

}  // namespace

Server::Server(Engine& engine, const train::Tokenizer& tok, ServerOptions options)
    : engine_(engine), tok_(tok), texts_(tok), o_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  if (o_.stream_interval < 1 || o_.stream_interval > kCatchUpEvents)
    throw InputError::field("--stream-interval", "must be in [1, " + std::to_string(kCatchUpEvents) + "], got " +
                                                     std::to_string(o_.stream_interval));
  routes();
}

Server::~Server() { stop(); }

void Server::bind() {
  if (o_.port < 0 || o_.port > 65535)
    throw InputError::field("--port", "must be in [0, 65535], got " + std::to_string(o_.port));
  if (o_.port == 0) {
    port_ = http_->bind_to_any_port(o_.host);
    if (port_ <= 0) throw InputError::field("--host", "cannot listen on " + o_.host);
  } else {
    if (!http_->bind_to_port(o_.host, o_.port))
      throw InputError::field("--port", "cannot listen on " + o_.host + ":" +
                                            std::to_string(o_.port) + " (in use, or not an address of this machine)");
    port_ = o_.port;
  }
  // The socket httplib made and listens on (set_socket_options in routes()), with a longer queue:
  // listen() again on a listening socket sets its backlog.
  if (listen_fd_ < 0 || ::listen(listen_fd_, kListenBacklog) != 0)
    throw InputError::field("--port", "cannot listen on " + o_.host + ":" + std::to_string(port_) +
                                          " with a queue of " + std::to_string(kListenBacklog));
}

void Server::listen() { http_->listen_after_bind(); }

void Server::drain() {
  draining_ = true;
  while (in_flight_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void Server::stop() {
  if (http_) http_->stop();
}

void Server::routes() {
  httplib::Server& s = *http_;
  const int threads = std::max(4, o_.http_threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  s.set_payload_max_length(o_.max_request_bytes);
  s.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = int(sock);
  });
  s.set_read_timeout(30, 0);
  s.set_write_timeout(30, 0);

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (o_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") != "Bearer " + o_.api_key) {
      send_error(res, ApiError(401, "a valid API key is required (Authorization: Bearer ...)", "",
                               "invalid_request_error", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_error(res, ApiError(404, "no route " + req.method + " " + req.path, "", "invalid_request_error",
                               "unknown_url"));
    else if (res.status == 413)
      send_error(res, ApiError(413, "the request body is over " + std::to_string(o_.max_request_bytes) +
                                        " bytes"));
    else
      send_error(res, ApiError(res.status, "HTTP " + std::to_string(res.status)));
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, what, "", "server_error"));
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_)
      send_json(res, 503, {{"status", "draining"}});
    else
      send_json(res, 200, {{"status", "ok"}});
  });

  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    json m = {{"id", o_.model_name}, {"object", "model"}, {"created", now_seconds()},
              {"owned_by", "trex"}, {"max_model_len", engine_.context()}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
  });

  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      const json j = parse_body(req.body);
      std::vector<int32_t> ids;
      if (j.contains("messages")) {
        ids = train::render_prompt(parse_messages(j["messages"]), tok_);
      } else if (j.contains("prompt") && j["prompt"].is_string()) {
        ids = {tok_.bos_id()};
        if (j.value("add_special_tokens", true) == false) ids.clear();
        std::vector<int32_t> body = tok_.encode(j["prompt"].get<std::string>());
        ids.insert(ids.end(), body.begin(), body.end());
      } else {
        throw ApiError(400, "give 'prompt' (a string) or 'messages'", "prompt");
      }
      send_json(res, 200, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine_.context()}});
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });

  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      const json j = parse_body(req.body);
      if (!j.contains("tokens") || !j["tokens"].is_array())
        throw ApiError(400, "'tokens' must be a list of token ids", "tokens");
      std::vector<int32_t> ids;
      for (const json& x : j["tokens"]) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tok_.vocab_size())
          throw ApiError(400, "'tokens' must be ids in [0, " + std::to_string(tok_.vocab_size()) + ")",
                         "tokens");
        ids.push_back(x.get<int32_t>());
      }
      send_json(res, 200, {{"prompt", tok_.decode(ids)}});
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });

  auto generate = [this](bool chat, const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<Job> job = std::make_shared<Job>();
    ++in_flight_;
    job->in_flight = &in_flight_;
    try {
      if (draining_) throw ApiError(503, "the server is shutting down", "", "server_error");
      job->req = chat ? parse_chat_request(req.body, o_.max_n) : parse_completion_request(req.body, o_.max_n);
      const CompletionRequest& r = job->req;
      if (!r.model.empty() && r.model != o_.model_name)
        throw ApiError(404, "the model '" + r.model + "' does not exist; this server serves '" +
                                o_.model_name + "'",
                       "model", "invalid_request_error", "model_not_found");
      GenerationParams p;
      p.stop_ids = {tok_.eos_id()};
      if (chat) {
        job->prompt = train::render_prompt(r.messages, tok_, &job->numbers);
        p.stop_ids.push_back(tok_.end_id());
        // A slot past the prompt's numbers could never be filled (a 422): it is never drawn.
        p.excluded_ids = train::unfillable_slot_ids(tok_, job->numbers.size());
      } else if (r.prompt_is_ids) {
        for (int32_t id : r.prompt_ids)
          if (id < 0 || id >= tok_.vocab_size())
            throw ApiError(400, "prompt token id " + std::to_string(id) + " outside [0, " +
                                    std::to_string(tok_.vocab_size()) + ")",
                           "prompt");
        job->prompt = r.prompt_ids;
      } else {
        job->prompt = {tok_.bos_id()};
        std::vector<int32_t> body = tok_.encode(r.prompt_text);
        job->prompt.insert(job->prompt.end(), body.begin(), body.end());
      }
      if (job->prompt.empty()) throw ApiError(400, "the prompt is empty", chat ? "messages" : "prompt");
      if (int64_t(job->prompt.size()) >= engine_.context())
        throw ApiError(400, "this model's maximum context length is " + std::to_string(engine_.context()) +
                                " tokens; the prompt has " + std::to_string(job->prompt.size()),
                       chat ? "messages" : "prompt", "invalid_request_error", "context_length_exceeded");
      if (r.echo && r.stream) throw ApiError(400, "'echo' cannot be combined with 'stream'", "echo");
      job->max_tokens = std::min<int64_t>(r.max_tokens.value_or(chat ? o_.max_tokens_cap : 16), o_.max_tokens_cap);
      job->seed = r.seed ? *r.seed : std::random_device{}();
      p.prompt = job->prompt;
      p.temperature = r.temperature;
      p.top_p = r.top_p;
      p.max_tokens = job->max_tokens;
      p.vocab_limit = tok_.vocab_size();
      p.token_logprobs = r.want_logprobs;
      p.logprobs = r.want_logprobs ? r.logprobs : 0;
      for (int i = 0; i < r.n; ++i) {
        GenerationParams pi = p;
        pi.seed = job->seed + uint64_t(i);
        pi.prompt_logprobs = i == 0 && r.echo && r.want_logprobs;
        std::shared_ptr<Generation> g;
        try {
          g = engine_.submit(std::move(pi));
        } catch (const InputError& e) {
          throw ApiError(400, e.detail(), chat ? "messages" : "prompt");
        }
        if (!g) throw ApiError(429, "the server is busy: every slot and queue place is taken; retry later",
                               "", "rate_limit_error", "rate_limit_exceeded");
        job->gens.push_back(g);
        job->texts.emplace_back(texts_, r.stop,
                                chat && tok_.number_slot_count() > 0
                                    ? std::optional<std::vector<std::string>>(job->numbers)
                                    : std::nullopt);
        job->finish.emplace_back();
        job->token_lp.emplace_back();
      }
    } catch (const ApiError& e) {
      send_error(res, e);
      return;
    }
    job->id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++) + "-" + std::to_string(job->seed % 100000);
    job->created = now_seconds();
    const std::string object = chat ? "chat.completion" : "text_completion";

    if (!job->req.stream) {
      std::vector<std::string> text(job->gens.size());
      try {
        for (size_t i = 0; i < job->gens.size(); ++i) {
          while (job->finish[i].empty()) {
            text[i] += pump(*job, i, 1000);
            throw_if_failed(*job);
          }
        }
      } catch (const ApiError& e) {
        send_error(res, e);
        return;
      }
      json choices = json::array();
      for (size_t i = 0; i < job->gens.size(); ++i) {
        json c = {{"index", i}, {"finish_reason", job->finish[i]}};
        if (chat) {
          c["message"] = {{"role", "assistant"}, {"content", text[i]}};
          c["logprobs"] = job->req.want_logprobs ? chat_logprobs(tok_, job->token_lp[i]) : json(nullptr);
        } else {
          const std::string prefix = job->req.echo ? (job->req.prompt_is_ids ? tok_.decode(job->prompt) : job->req.prompt_text) : "";
          c["text"] = prefix + text[i];
          c["logprobs"] = job->req.want_logprobs
                              ? completion_logprobs(tok_, job->prompt, job->prompt_lp, job->req.echo && i == 0,
                                                    job->token_lp[i])
                              : json(nullptr);
        }
        choices.push_back(c);
      }
      const int64_t pt = int64_t(job->prompt.size());
      send_json(res, 200,
                {{"id", job->id}, {"object", object}, {"created", job->created}, {"model", o_.model_name},
                 {"system_fingerprint", "trex"}, {"choices", choices},
                 {"usage", {{"prompt_tokens", pt}, {"completion_tokens", job->completion_tokens},
                            {"total_tokens", pt + job->completion_tokens}}}});
      return;
    }

    // Streaming: server-sent events, one chunk per piece of text, then the finish, the usage
    // (when asked) and [DONE].
    struct Stream {
      bool started = false, done = false;
      std::vector<bool> finish_sent, text_sent;
    };
    auto st = std::make_shared<Stream>();
    st->finish_sent.assign(job->gens.size(), false);
    st->text_sent.assign(job->gens.size(), false);
    const int interval = o_.stream_interval;
    const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
    const std::string model = o_.model_name;
    res.set_header("Cache-Control", "no-cache");
    // The text chunks' bytes, built from the stream's fixed parts (text_chunk_event.h).
    auto text_event = std::make_shared<const TextChunkEvent>(chat, job->id, chunk_object, job->created, model);
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, st, chat, chunk_object, model, interval, text_event](size_t, httplib::DataSink& sink) {
          auto chunk = [&](json choice) {
            json c = {{"id", job->id}, {"object", chunk_object}, {"created", job->created},
                      {"model", model}, {"system_fingerprint", "trex"}, {"choices", json::array({choice})}};
            const std::string line = "data: " + c.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
            return sink.write(line.data(), line.size());
          };
          auto piece = [&](size_t i, const std::string& text, json finish) {
            if (finish.is_null() && !text.empty()) {
              const std::string line = (*text_event)(i, text);
              return sink.write(line.data(), line.size());
            }
            json choice = {{"index", i}, {"finish_reason", finish}, {"logprobs", nullptr}};
            if (chat)
              choice["delta"] = text.empty() && !finish.is_null() ? json::object() : json{{"content", text}};
            else
              choice["text"] = text;
            return chunk(choice);
          };
          // No sink.is_writable() here: httplib polls the socket itself before each call of
          // this provider and before each write (a poll finds a closed peer writable anyway; the
          // write fails), and a third poll per chunk was ~2% of the HTTP threads' CPU.
          if (!st->started) {
            st->started = true;
            if (chat)
              for (size_t i = 0; i < job->gens.size(); ++i)
                if (!chunk({{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                            {"logprobs", nullptr}, {"finish_reason", nullptr}}))
                  return false;
          }
          try {
            for (size_t i = 0; i < job->gens.size(); ++i) {
              // The first text goes out at once (time to first token); later chunks every
              // stream_interval tokens.
              const std::string text = pump(*job, i, job->gens.size() == 1 ? 200 : 20,
                                            st->text_sent[i] ? interval : 1);
              if (!text.empty()) st->text_sent[i] = true;
              if (!text.empty() && !piece(i, text, nullptr)) return false;
              throw_if_failed(*job);  // after the text decoded before the error
              if (!job->finish[i].empty() && !st->finish_sent[i]) {
                st->finish_sent[i] = true;
                if (!piece(i, "", job->finish[i])) return false;
              }
            }
          } catch (const ApiError& e) {
            const std::string line = "data: " + error_body(e).dump() + "\n\n";
            sink.write(line.data(), line.size());
            sink.done();
            return true;
          }
          if (all_finished(*job)) {
            if (job->req.include_usage) {
              const int64_t pt = int64_t(job->prompt.size());
              json c = {{"id", job->id}, {"object", chunk_object}, {"created", job->created},
                        {"model", model}, {"choices", json::array()},
                        {"usage", {{"prompt_tokens", pt}, {"completion_tokens", job->completion_tokens},
                                   {"total_tokens", pt + job->completion_tokens}}}};
              const std::string line = "data: " + c.dump() + "\n\n";
              if (!sink.write(line.data(), line.size())) return false;
            }
            const std::string end = "data: [DONE]\n\n";
            if (!sink.write(end.data(), end.size())) return false;
            sink.done();
          }
          return true;
        },
        [job](bool) {
          for (auto& g : job->gens) g->cancel();
        });
  };
  s.Post("/v1/chat/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(true, req, res);
  });
  s.Post("/v1/completions", [generate](const httplib::Request& req, httplib::Response& res) {
    generate(false, req, res);
  });
}

}  // namespace trex::serve
