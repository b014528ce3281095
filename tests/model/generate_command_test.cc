// `trex generate` run as a subprocess on a checkpoint directory this test writes (a small
// V4 model's weights, a tokenizer trained here, state.json): one prompt to stdout, batch mode
// to the completions JSONL `trex eval run` reads, and one-line errors for bad input (among them
// --model-config of a model file changed since training, which the checkpoint's recorded model
// config refuses naming the field and both values, and a checkpoint written before that record
// whose train config is gone).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/model/config.h"
#include "trex/model/generator.h"
#include "trex/model/transformer.h"
#include "trex/train/chat_template.h"
#include "trex/train/number_slots.h"
#include "trex/train/tokenizer.h"
#include "trex/util/subprocess.h"
#include "model/tiny_checkpoint.h"

namespace trex {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

ProcessResult trex_run(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  o.cwd = TREX_SOURCE_DIR;
  return run_process(argv, o);
}

class GenerateCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("trex-generate-test-" + std::to_string(::getpid())));
    test_util::write_tiny_checkpoint(*dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::string ckpt() { return (*dir_ / "ckpt").string(); }
  static std::string model_toml() { return (*dir_ / "model.toml").string(); }
  static fs::path* dir_;
};
fs::path* GenerateCommand::dir_ = nullptr;

TEST_F(GenerateCommand, OnePromptGivesTheGreedyCompletionOfTheModel) {
  ProcessResult r = trex_run({"generate", "--ckpt", ckpt(), "--model-config", model_toml(),
                              "--prompt", "minimize cost", "--max-tokens", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The same in-process: chat format (the checkpoint says SFT), greedy.
  model::ModelConfig c = model::load_model_config(model_toml());
  model::Transformer m(c, 0, false);
  m.load(ckpt() + "/model.safetensors");
  train::Tokenizer tok = train::Tokenizer::load(ckpt() + "/tokenizer.model");
  model::Generator gen(m);
  model::SamplingOptions o;
  o.max_tokens = 6;
  o.stop_ids = {tok.eos_id(), tok.end_id()};
  o.vocab_limit = tok.vocab_size();
  std::vector<int32_t> ids =
      gen.generate(train::render_prompt({{train::Role::kUser, "minimize cost"}}, tok), o);
  EXPECT_EQ(r.out, tok.decode(ids) + "\n");
}

TEST_F(GenerateCommand, BatchModeWritesCompletionsForEval) {
  const fs::path prompts = *dir_ / "prompts.jsonl", out = *dir_ / "out.jsonl";
  write(prompts, R"({"id": "a1", "prompt": "minimize cost"}
{"id": 7, "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "capacity"}]}
)");
  ProcessResult r = trex_run({"generate", "--ckpt", ckpt(), "--model-config", model_toml(),
                              "--prompts", prompts.string(), "--out", out.string(),
                              "--max-tokens", "4", "--temperature", "0.8", "--top-p", "0.9",
                              "--samples", "2", "--seed", "5", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(slurp(out));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["id"], "a1");
  EXPECT_EQ(lines[1]["sample"], 1);
  EXPECT_EQ(lines[2]["id"], 7);
  for (const nlohmann::json& j : lines) EXPECT_TRUE(j["completion"].is_string());
  // Seeded: a second run writes the same file.
  const std::string first = slurp(out);
  ASSERT_EQ(trex_run({"generate", "--ckpt", ckpt(), "--model-config", model_toml(), "--prompts",
                      prompts.string(), "--out", out.string(), "--max-tokens", "4",
                      "--temperature", "0.8", "--top-p", "0.9", "--samples", "2", "--seed", "5",
                      "--quiet"})
                .exit_code,
            0);
  EXPECT_EQ(slurp(out), first);
}

TEST_F(GenerateCommand, BadInputIsOneLineAndExitTwo) {
  const fs::path bad = *dir_ / "bad.jsonl";
  write(bad, "{\"id\": \"x\", \"prompt\": \"ok\"}\n{\"id\": \"y\"}\n");
  // The model file changed after training (same shapes): the checkpoint's record refuses it.
  std::string changed = test_util::kTinyCheckpointModelToml;
  changed.replace(changed.find("rope_dims = 8"), 13, "rope_dims = 4");
  write(*dir_ / "changed.toml", changed);
  // A checkpoint written before checkpoints recorded their model, its train config gone.
  test_util::write_tiny_checkpoint(*dir_ / "old", false);
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  std::vector<Case> cases = {
      {{"generate", "--ckpt", ckpt(), "--model-config", model_toml(), "--prompts", bad.string(),
        "--out", (*dir_ / "o.jsonl").string()},
       "bad.jsonl:2"},
      {{"generate", "--ckpt", ckpt(), "--model-config", (*dir_ / "changed.toml").string(), "--prompt", "hi"},
       "attention.rope_dims = 8, --model-config " + (*dir_ / "changed.toml").string() + " has 4"},
      {{"generate", "--ckpt", (*dir_ / "old" / "ckpt").string(), "--prompt", "hi"}, "--model-config"},
      {{"generate", "--ckpt", (*dir_ / "nothing").string(), "--prompt", "hi"}, "--ckpt"},
      {{"generate", "--ckpt", ckpt(), "--prompts", bad.string()}, "--out"},
      {{"generate", "--ckpt", ckpt(), "--prompt", "hi", "--top-p", "0"}, "--top-p"}};
  for (const Case& c : cases) {
    ProcessResult r = trex_run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.names << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
  }
}


// Number slots with the slot logits forced far above the rest (write_tiny_checkpoint's
// slot_logit_scale): batch chat mode, greedy and sampled, never writes a slot past the prompt's
// numbers (no line with an "error", which is how such a completion was recorded before), and
// each completion is the masked in-process generator's with the numbers filled in; the same
// generator without the mask writes unfillable slots.
TEST_F(GenerateCommand, BatchChatNeverWritesASlotThePromptCannotFill) {
  const fs::path dir = *dir_ / "forced-slots";
  test_util::write_tiny_checkpoint(dir, true, 8, 50.f);
  const std::string ck = (dir / "ckpt").string();
  const fs::path prompts = dir / "prompts.jsonl", out = dir / "out.jsonl";
  write(prompts, R"({"id": 1, "prompt": "capacity 11 of the plant"}
{"id": 2, "messages": [{"role": "system", "content": "costs 4 and 9"}, {"role": "user", "content": "capacity 11"}]}
)");
  model::ModelConfig c = model::load_model_config((dir / "model.toml").string());
  model::Transformer m(c, 0, false);
  m.load(ck + "/model.safetensors");
  train::Tokenizer tok = train::Tokenizer::load(ck + "/tokenizer.model");
  const std::vector<std::vector<train::ChatMessage>> convs = {
      {{train::Role::kUser, "capacity 11 of the plant"}},
      {{train::Role::kSystem, "costs 4 and 9"}, {train::Role::kUser, "capacity 11"}}};
  int unmasked_unfillable = 0;
  for (const char* temperature : {"0", "1"}) {
    ProcessResult r = trex_run({"generate", "--ckpt", ck, "--prompts", prompts.string(), "--out", out.string(),
                                "--max-tokens", "12", "--temperature", temperature, "--samples", "2", "--seed", "3",
                                "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<nlohmann::json> lines;
    std::istringstream in(slurp(out));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(lines.size(), 4u);
    for (size_t k = 0; k < lines.size(); ++k) {
      const nlohmann::json& j = lines[k];
      EXPECT_FALSE(j.contains("error")) << j.dump();
      std::vector<std::string> numbers;
      const std::vector<int32_t> prompt = train::render_prompt(convs[k / 2], tok, &numbers);
      model::Generator gen(m);
      model::SamplingOptions o;
      o.max_tokens = 12;
      o.temperature = std::stod(temperature);
      o.seed = 3 + uint64_t(j["sample"].get<int>());
      o.stop_ids = {tok.eos_id(), tok.end_id()};
      o.vocab_limit = tok.vocab_size();
      const std::vector<int32_t> unfillable = train::unfillable_slot_ids(tok, numbers.size());
      for (int32_t id : gen.generate(prompt, o))
        unmasked_unfillable += std::find(unfillable.begin(), unfillable.end(), id) != unfillable.end();
      o.excluded_ids = unfillable;
      EXPECT_EQ(j["completion"], train::from_slots(tok.decode(gen.generate(prompt, o)), numbers)) << j.dump();
    }
  }
  EXPECT_GE(unmasked_unfillable, 8 * 12 / 2);
}

}  // namespace
}  // namespace trex
