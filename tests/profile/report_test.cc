// The three renderings of one anatomy agree with it: the text names the head and the routes,
// the JSON carries every kernel, the HTML escapes names and holds its plots inline.
#include <gtest/gtest.h>

#include "trex/profile/report.h"

namespace trex::profile {
namespace {

Anatomy sample() {
  KernelTrace t;
  t.path = "sample.json";
  t.format = "kineto";
  for (int i = 0; i < 3; ++i) {
    KernelRecord r;
    r.name = "sm80_gemm<float, 128>";
    r.dur_us = 300;
    r.flops = 3e8;
    r.bytes = 3e6;
    t.kernels.push_back(r);
  }
  for (int i = 0; i < 40; ++i) {
    KernelRecord r;
    r.name = "elementwise_kernel<Mul & Add>";
    r.dur_us = 4;
    r.bytes = 4e4;
    t.kernels.push_back(r);
  }
  t.window_us = 1200;
  t.busy_us = 1060;
  AnatomyOptions o;
  Roofline roof;
  roof.device = "test device";
  roof.peak_flops = 2e12;
  roof.bytes_per_s = 1e11;
  o.roofline = roof;
  return analyze({t}, o);
}

TEST(Report, TextNamesHeadTailAndRoutes) {
  std::string s = anatomy_text(sample());
  EXPECT_NE(s.find("heavy head: 1 kernel, 84.9% of kernel time"), std::string::npos) << s;
  EXPECT_NE(s.find("launches under 20 us: 40 (93.0% of launches, 15.1% of time)"), std::string::npos) << s;
  EXPECT_NE(s.find("tune tiling"), std::string::npos);
  EXPECT_NE(s.find("fuse / re-express"), std::string::npos);
  EXPECT_NE(s.find("ridge 20.0 FLOP/B"), std::string::npos);
}

TEST(Report, JsonCarriesEveryKernel) {
  nlohmann::ordered_json j = anatomy_json(sample());
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["route"], "tune tiling");
  EXPECT_EQ(j["kernels"][0]["regime"], "compute-bound");
  EXPECT_DOUBLE_EQ(j["kernels"][0]["intensity_flop_per_byte"].get<double>(), 100);
  EXPECT_EQ(j["kernels"][1]["regime"], "memory-bound");
  EXPECT_DOUBLE_EQ(j["category_us"]["idle"].get<double>(), 140);
}

TEST(Report, HtmlEscapesNamesAndDrawsInline) {
  std::string h = anatomy_html(sample());
  EXPECT_NE(h.find("elementwise_kernel&lt;Mul &amp; Add&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<Mul & Add>"), std::string::npos);
  EXPECT_NE(h.find("<polyline"), std::string::npos);  // the roof
  EXPECT_NE(h.find("<circle"), std::string::npos);    // the GEMM on it
  EXPECT_EQ(h.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace trex::profile
