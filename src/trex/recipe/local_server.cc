#include "trex/recipe/local_server.h"

#include <signal.h>

#include <cctype>

#include "trex/util/error.h"

namespace trex::recipe {

LocalServer::LocalServer(const std::string& trex, const std::string& name, const std::vector<std::string>& args,
                         const std::string& what) {
  std::vector<std::string> argv = {trex, "serve", "--port", "0", "--name", name};
  argv.insert(argv.end(), args.begin(), args.end());
  proc_ = start_background(argv);
  const std::string line = read_line(proc_.out);
  const size_t at = line.find("http://127.0.0.1:");
  if (at == std::string::npos) {
    stop();
    throw InputError::field(what, "trex serve did not start (see its message above)");
  }
  size_t end = at + 17;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  url_ = line.substr(at, end - at);
}

int LocalServer::stop() { return stop_background(proc_, SIGTERM); }

}  // namespace trex::recipe
