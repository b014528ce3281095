// `trex serve` as a child process on a free port of 127.0.0.1, for the code that drives a model
// through its HTTP API as any client would: the recipe's serve stages and `trex demo`.
//
// The constructor starts `TREX serve --port 0 --name NAME ARGS...` (util/subprocess.h) and reads
// the first line it prints, which says where it listens; when that line does not come (a bad
// checkpoint: the server's own message is on stderr) it stops the child and throws InputError
// naming `what`. stop(), or the destructor, sends SIGTERM (the server drains and exits) and
// reaps the child; it returns the exit code, -1 when already stopped.
#pragma once

#include <string>
#include <vector>

#include "trex/util/subprocess.h"

namespace trex::recipe {

class LocalServer {
 public:
  LocalServer(const std::string& trex, const std::string& name, const std::vector<std::string>& args,
              const std::string& what);
  ~LocalServer() { stop(); }
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  // http://127.0.0.1:PORT (append "/v1" for OpenAI clients).
  const std::string& url() const { return url_; }
  int stop();

 private:
  BackgroundProcess proc_;
  std::string url_;
};

}  // namespace trex::recipe
