// parse_zygote_request: the request as warm_pool.cc writes it parses to the same values json.loads
// gives; escapes decode as JSON's; anything else is refused with what was wrong (the child then
// runs nothing: zygote_serve.cc's enter_in_child, ServeInC.test_entered_in_c_*).
#include "trex/oreval/zygote_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trex::oreval {
namespace {

struct Parsed {
  std::vector<char> arena;
  ZygoteRequest request;
  const char* error = nullptr;
};

Parsed parse(const std::string& text) {
  Parsed p;
  p.arena.resize(text.size() + 1);
  p.error = parse_zygote_request(text.data(), text.size(), p.arena.data(), &p.request);
  return p;
}

std::vector<std::string> strings(const std::vector<const char*>& v) { return {v.begin(), v.end()}; }

nlohmann::json a_request() {
  return {{"workdir", "/tmp/trex-eval-1/p0"},
          {"read_only", {"/usr", "/tmp/trex-warm-x/python"}},
          {"argv", {"/usr/bin/python3", "-I", "-B", "__trex_module/trex_eval_runner.py", "completion.py"}},
          {"env", {"PATH=/usr/bin:/bin", "HOME=/tmp/trex-eval-1/p0", "TREX_CHANNEL_FD=3"}},
          {"allow_weak", false},
          {"limits", {{"cpu_s", 21}, {"memory_bytes", uint64_t(4) << 30}, {"file_bytes", 64 << 20}, {"open_files", 64}}}};
}

TEST(ZygoteRequest, TheEvaluatorsRequestParsesToItsValues) {
  nlohmann::json j = a_request();
  Parsed p = parse(j.dump());
  ASSERT_EQ(p.error, nullptr) << p.error;
  EXPECT_STREQ(p.request.workdir, "/tmp/trex-eval-1/p0");
  EXPECT_EQ(strings(p.request.read_only), j["read_only"].get<std::vector<std::string>>());
  EXPECT_EQ(strings(p.request.argv), j["argv"].get<std::vector<std::string>>());
  EXPECT_EQ(strings(p.request.env), j["env"].get<std::vector<std::string>>());
  EXPECT_EQ(p.request.cpu_s, 21);
  EXPECT_EQ(p.request.memory_bytes, uint64_t(4) << 30);
  EXPECT_EQ(p.request.file_bytes, uint64_t(64) << 20);
  EXPECT_EQ(p.request.open_files, 64);
  EXPECT_FALSE(p.request.allow_weak);
  // Python's json.dumps (the tests' requests): blanks after ':' and ','; keys in any order,
  // unknown ones skipped, the last of a repeated key kept, true.
  Parsed q = parse(
      "{\"limits\": {\"open_files\": 3, \"cpu_s\": 1, \"x\": [1.5e3, {\"y\": null}], \"memory_bytes\": 18446744073709551615, "
      "\"file_bytes\": 0}, \"workdir\": \"/a\", \"extra\": {\"k\": [true, false, -2, \"s\"]}, \"read_only\": [], "
      "\"argv\": [], \"env\": [\"A=1\"], \"allow_weak\": true, \"workdir\": \"/b\"}\n");
  ASSERT_EQ(q.error, nullptr) << q.error;
  EXPECT_STREQ(q.request.workdir, "/b");
  EXPECT_TRUE(q.request.read_only.empty());
  EXPECT_TRUE(q.request.argv.empty());
  EXPECT_EQ(strings(q.request.env), std::vector<std::string>{"A=1"});
  EXPECT_EQ(q.request.memory_bytes, ~uint64_t(0));
  EXPECT_EQ(q.request.file_bytes, 0u);
  EXPECT_EQ(q.request.cpu_s, 1);
  EXPECT_EQ(q.request.open_files, 3);
  EXPECT_TRUE(q.request.allow_weak);
}

TEST(ZygoteRequest, EscapesDecodeAsJsonsDo) {
  // nlohmann writes control characters as \u00XX and the rest of UTF-8 as it is; every escape
  // JSON has, and a surrogate pair, decode to their UTF-8.
  nlohmann::json j = a_request();
  std::string odd = "tab\there \"quoted\" back\\slash \x01 caf\xc3\xa9 \xf0\x9f\x98\x80";
  j["env"] = {"X=" + odd};
  Parsed p = parse(j.dump());
  ASSERT_EQ(p.error, nullptr) << p.error;
  EXPECT_EQ(strings(p.request.env), std::vector<std::string>{"X=" + odd});
  std::string text = j.dump();
  std::string escaped = "\"X=\\b\\f\\n\\r\\t\\/\\u00e9\\ud83d\\ude00\"";
  text.replace(text.find("\"env\":[") + 7, j["env"][0].dump().size(), escaped);
  Parsed e = parse(text);
  ASSERT_EQ(e.error, nullptr) << e.error << " in " << text;
  EXPECT_EQ(strings(e.request.env), std::vector<std::string>{"X=\b\f\n\r\t/\xc3\xa9\xf0\x9f\x98\x80"});
}

TEST(ZygoteRequest, AnythingElseIsRefusedSayingWhat) {
  std::string good = a_request().dump();
  auto with = [&](const std::string& key, const std::string& value) {
    nlohmann::json j = a_request();
    std::string text = j.dump();
    size_t at = text.find("\"" + key + "\":") + key.size() + 3;
    size_t end = at + j[key].dump().size();
    return text.substr(0, at) + value + text.substr(end);
  };
  auto without = [&](const std::string& key) {
    nlohmann::json j = a_request();
    j.erase(key);
    return j.dump();
  };
  auto limit = [&](const std::string& key, const std::string& value) {
    nlohmann::json j = a_request();
    std::string text = j.dump();
    size_t at = text.find("\"" + key + "\":") + key.size() + 3;
    size_t end = at + j["limits"][key].dump().size();
    return text.substr(0, at) + value + text.substr(end);
  };
  nlohmann::json no_cpu = a_request();
  no_cpu["limits"].erase("cpu_s");
  const std::pair<std::string, std::string> cases[] = {
      {"", "an object expected"},
      {"[]", "an object expected"},
      {good.substr(0, good.size() - 1), "an object not ended"},
      {good + "x", "bytes after the object"},
      {good.substr(0, 40), "a string not ended"},
      {without("workdir"), "workdir missing"},
      {without("read_only"), "read_only missing"},
      {without("argv"), "argv missing"},
      {without("env"), "env missing"},
      {without("limits"), "limits missing"},
      {without("allow_weak"), "allow_weak missing"},
      {no_cpu.dump(), "limits: cpu_s missing"},
      {with("workdir", "7"), "a string expected"},
      {with("workdir", "null"), "a string expected"},
      {with("argv", "\"p.py\""), "an array of strings expected"},
      {with("argv", "[\"a\", 1]"), "a string expected"},
      {with("argv", "[\"a\""), "an array not ended"},
      {with("env", "[\"A=\\u0000\"]"), "a NUL in a string"},
      {with("env", "[\"A=\\ud800\"]"), "a lone surrogate"},
      {with("env", "[\"A=\\udc00\"]"), "a lone surrogate"},
      {with("env", "[\"A=\\ud800\\u0041\"]"), "a lone surrogate"},
      {with("env", "[\"A=\\u12\"]"), "a bad \\u escape"},
      {with("env", "[\"A=\\x41\"]"), "a bad escape"},
      {with("env", "[\"A=\x01\"]"), "a control character in a string"},
      {with("allow_weak", "1"), "allow_weak: true or false expected"},
      {with("allow_weak", "\"false\""), "allow_weak: true or false expected"},
      {with("limits", "[]"), "limits: an object expected"},
      {limit("cpu_s", "-1"), "a non-negative integer expected"},
      {limit("cpu_s", "1.5"), "a non-negative integer expected"},
      {limit("cpu_s", "1e3"), "a non-negative integer expected"},
      {limit("cpu_s", "\"1\""), "a non-negative integer expected"},
      {limit("cpu_s", "01"), "an integer with a leading zero"},
      {limit("cpu_s", "2147483648"), "an integer out of range"},
      {limit("open_files", "99999999999"), "an integer out of range"},
      {limit("memory_bytes", "18446744073709551616"), "an integer out of range"},
      {with("argv", std::string(40, '[') + std::string(40, ']')), "a string expected"},
  };
  for (const auto& [text, why] : cases) {
    Parsed p = parse(text);
    ASSERT_NE(p.error, nullptr) << text;
    EXPECT_EQ(std::string(p.error), why) << text;
  }
  // An unknown key's value nested deeper than the parser follows is refused, not recursed into.
  nlohmann::json deep = a_request();
  std::string text = deep.dump();
  text.insert(1, "\"x\":" + std::string(100, '[') + std::string(100, ']') + ",");
  Parsed p = parse(text);
  ASSERT_NE(p.error, nullptr);
  EXPECT_STREQ(p.error, "nested too deep");
}

}  // namespace
}  // namespace trex::oreval
