// `trex recipe run` on configs/recipe/or-tiny.toml through the binary: every stage kind runs for
// real (corpus and held-out corpus, benchmark, copy documents, the copy stage, base pre-training, CPT balanced and pure, SFT on
// each, serving and evaluating four models); the report holds each model's Pass@1 with its
// interval, the loss curves and each stage's cost; a rerun reuses every stage; a changed input
// re-runs its stage and the ones after it; bad input is one line, exit 2. One stage evaluates on
// a real benchmark (nl4opt) read from the data folder: scored where the data is, skipped with the
// reason where it is not (both paths run here: the second by pointing TREX_DATA_DIR elsewhere).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/recipe/recipe.h"
#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace trex::recipe {
namespace {

long count_occurrences(const std::string& text, const std::string& what) {
  long n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

namespace fs = std::filesystem;

using test_util::TempDir;

ProcessResult trex(std::vector<std::string> args) { return test_util::run_trex(std::move(args)); }

// TREX_DATA_DIR set to `dir` for this object's life (the trex children inherit it).
class DataDirOverride {
 public:
  explicit DataDirOverride(const std::string& dir) {
    if (const char* old = std::getenv(kDataDirEnv)) old_ = old, had_ = true;
    setenv(kDataDirEnv, dir.c_str(), 1);
  }
  ~DataDirOverride() {
    if (had_) setenv(kDataDirEnv, old_.c_str(), 1);
    else unsetenv(kDataDirEnv);
  }

 private:
  std::string old_;
  bool had_ = false;
};

TEST(Recipe, TinyRecipeRunsEveryStageThenReusesThemAndRerunsWhatChanged) {
  TempDir d("recipe");
  // A copy of configs/recipe beside a copy of configs/model, so the test can change an input.
  fs::create_directories(d.path + "/configs");
  fs::copy(fs::path(TREX_SOURCE_DIR) / "configs/recipe", d.path + "/configs/recipe", fs::copy_options::recursive);
  const std::string file = d.path + "/configs/recipe/or-tiny.toml", out = d.path + "/out";
  ProcessResult first = trex({"recipe", "run", file, "--out", out, "--quiet"});
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  EXPECT_NE(first.out.find("or-tiny: 17 stages (0 cached)"), std::string::npos) << first.out;
  // The copy documents the base and SFT stages mix in (copy_docs_test checks their contents).
  const std::string copy = read_file(out + "/copy-docs/copy.jsonl");
  EXPECT_EQ(std::count(copy.begin(), copy.end(), '\n'), 200);
  // The copy stage trains from scratch on the in-order documents with the loss on the answers
  // only; base continues from it.
  const std::string in_order = read_file(out + "/copy-in-order/copy.jsonl");
  EXPECT_EQ(std::count(in_order.begin(), in_order.end(), '\n'), 100);
  EXPECT_EQ(std::count(in_order.begin(), in_order.end(), '\n'), count_occurrences(in_order, "\"content\":\"Numbers: "));
  EXPECT_NE(read_file(out + "/configs/copy.toml").find("mode = \"sft\""), std::string::npos);
  EXPECT_NE(read_file(out + "/configs/base.toml").find("init_from = \"" + out + "/copy\""), std::string::npos);
  const bool have_nl4opt = !find_data("or-benchmarks/nl4opt/slai_trex_test.jsonl").empty();
  if (have_nl4opt) {
    EXPECT_TRUE(std::regex_search(first.out, std::regex(R"(\n  SFT \(nl4opt\) +Pass@1 [01]\.\d{3} \(\d/3, 95% \[)"))) << first.out;
    EXPECT_NE(read_file(out + "/report.md").find("| SFT (nl4opt) | nl4opt | "), std::string::npos);
  } else {
    std::printf("nl4opt is absent under %s: only the stage's skip is checked\n", data_dir().c_str());
    EXPECT_NE(first.out.find("SFT (nl4opt)     skipped: benchmark nl4opt not found"), std::string::npos) << first.out;
  }
  for (const char* label : {"base", "SFT", "CPT(balanced)+SFT", "CPT(pure OR)+SFT"})
    EXPECT_TRUE(std::regex_search(first.out, std::regex(std::string("\\n  ") + std::regex_replace(label, std::regex(R"([()+])"), R"(\$&)") +
                                                        R"( +Pass@1 [01]\.\d{3} \(\d/6, 95% \[)")))
        << label << "\n" << first.out;
  const std::string md = read_file(out + "/report.md");
  EXPECT_NE(md.find("| CPT(balanced)+SFT | heldout-bench.jsonl | "), std::string::npos) << md;
  EXPECT_NE(md.find("| cpt-pure-sft | 3 |"), std::string::npos) << md;  // its loss curve
  EXPECT_NE(md.find("| eval-cpt-pure-sft | serve |"), std::string::npos) << md;
  const std::string html = read_file(out + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(std::count(html.begin(), html.end(), '\n') > 20, true);
  // The held-out benchmark: the held-out corpus's samples, none of them in the training corpus.
  std::ifstream bench(out + "/heldout-bench.jsonl");
  int items = 0;
  for (std::string line; std::getline(bench, line); ++items) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("id") && j.contains("question") && j.contains("answer")) << line;
  }
  EXPECT_EQ(items, 6);
  // Every SFT stage learned from counted targets (the answers fit in its rows).
  std::ifstream metrics(out + "/sft/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  EXPECT_GT(nlohmann::json::parse(line)["counted"].get<long>(), 0) << line;

  ProcessResult again = trex({"recipe", "run", file, "--out", out, "--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  // A skipped stage is never recorded, so it runs once the data is there.
  EXPECT_NE(again.out.find(have_nl4opt ? "or-tiny: 17 stages (17 cached)" : "or-tiny: 17 stages (16 cached)"),
            std::string::npos) << again.out;

  // Without the data: the real-benchmark stage is skipped with its reason, the rest reused.
  {
    DataDirOverride none(d.path + "/no-data");
    ProcessResult absent = trex({"recipe", "run", file, "--out", out, "--quiet"});
    ASSERT_EQ(absent.exit_code, 0) << absent.err;
    EXPECT_NE(absent.out.find("or-tiny: 17 stages (16 cached)"), std::string::npos) << absent.out;
    const std::string why = "skipped: benchmark nl4opt not found: " + d.path +
                            "/no-data/or-benchmarks/nl4opt/slai_trex_test.jsonl is absent (set TREX_DATA_DIR";
    EXPECT_NE(absent.out.find("SFT (nl4opt)     " + why), std::string::npos) << absent.out;
    const std::string report = read_file(out + "/report.md");
    EXPECT_NE(report.find("| SFT (nl4opt) | nl4opt | " + why), std::string::npos) << report;
    EXPECT_NE(report.find("| eval-sft-nl4opt | serve | 0.0 | skipped |"), std::string::npos) << report;
  }

  // A changed input re-runs its stage and every later one (11 before it are reused).
  std::string sft = read_file(d.path + "/configs/recipe/tiny-sft-from-cpt-pure.toml");
  sft.replace(sft.find("steps = 3"), 9, "steps = 2");
  write_file_atomic(d.path + "/configs/recipe/tiny-sft-from-cpt-pure.toml", sft);
  ProcessResult changed = trex({"recipe", "run", file, "--out", out, "--quiet"});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_NE(changed.out.find("or-tiny: 17 stages (11 cached)"), std::string::npos) << changed.out;
  EXPECT_NE(read_file(out + "/report.md").find("| cpt-pure-sft | 2 |"), std::string::npos);
}

TEST(Recipe, BadInputIsOneLineAndExitTwo) {
  TempDir d("recipe");
  write_file_atomic(d.path + "/two.toml", "[[stage]]\nname = \"x\"\nrun = [\"hw\"]\nbenchmark = \"y\"\n");
  write_file_atomic(d.path + "/fails.toml", "[[stage]]\nname = \"gen\"\nrun = [\"data\", \"gen\", \"--count\", \"0\", \"--out\", \"{out}/c\"]\n");
  write_file_atomic(d.path + "/nobench.toml", "[[stage]]\nname = \"e\"\nserve = \"{out}/r\"\n");
  // A missing template is refused at load, before the first stage (gen) writes anything.
  const std::string gen = "[[stage]]\nname = \"gen\"\nrun = [\"data\", \"gen\", \"--count\", \"1\", \"--out\", \"{out}/one\"]\n";
  write_file_atomic(d.path + "/notpl.toml", gen + "[[stage]]\nname = \"e\"\nserve = \"{out}/r\"\nbench = \"b\"\n"
                                                  "template = \"{recipe}/missing.txt\"\n");
  write_file_atomic(d.path + "/tplrun.toml", gen + "template = \"{recipe}/missing.txt\"\n");
  write_file_atomic(d.path + "/nocopy.toml", "[[stage]]\nname = \"c\"\ncopy_docs = 0\n");
  write_file_atomic(d.path + "/style.toml", "[[stage]]\nname = \"c\"\ncopy_docs = 5\nstyle = \"zigzag\"\n");
  struct Case {
    std::string file, names;
  };
  for (const Case& k : {Case{d.path + "/none.toml", "none.toml"}, Case{d.path + "/two.toml", "two.toml:1"},
                        Case{d.path + "/fails.toml", "stage gen"}, Case{d.path + "/nobench.toml", "nobench.toml:1"},
                        Case{d.path + "/notpl.toml", "notpl.toml:4: stage e.template: " + d.path + "/missing.txt not found"},
                        Case{d.path + "/tplrun.toml", "tplrun.toml:1: stage gen.template: only with serve"},
                        Case{d.path + "/nocopy.toml", "nocopy.toml:1: stage c.copy_docs: must be >= 1"},
                        Case{d.path + "/style.toml", "style.toml:1: stage c.style: 'zigzag' is not mixed, in-order, keyed or keyed-in-order"}}) {
    ProcessResult r = trex({"recipe", "run", k.file, "--out", d.path + "/out", "--quiet"});
    EXPECT_EQ(r.exit_code, 2) << k.names << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(k.names), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(d.path + "/out/one")) << "no stage runs before the template is checked";
}

TEST(Recipe, WilsonIntervalIsTheStandardOne) {
  // 0 of 6: [0, 0.390]; 5 of 10: [0.237, 0.763] (Wilson, z = 1.96).
  auto [lo0, hi0] = wilson_interval(0, 6);
  EXPECT_DOUBLE_EQ(lo0, 0.0);
  EXPECT_NEAR(hi0, 0.3903, 1e-4);
  auto [lo, hi] = wilson_interval(5, 10);
  EXPECT_NEAR(lo, 0.2366, 1e-4);
  EXPECT_NEAR(hi, 0.7634, 1e-4);
}

}  // namespace
}  // namespace trex::recipe
