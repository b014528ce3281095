#include <gtest/gtest.h>

#include <algorithm>

#include "trex/core/cpu_features.h"

namespace trex::core {
namespace {

TEST(CoreCpuFeatures, ImpliedFeaturesAreConsistent) {
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(!f.avx2 || f.avx);
  EXPECT_TRUE(!f.avx512f || f.avx2);
  EXPECT_TRUE(!f.avx512_bf16 || f.avx512f);
  std::vector<std::string> names = f.names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "avx2"), f.avx2 ? 1 : 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "avx512f"), f.avx512f ? 1 : 0);
}

TEST(CoreCpuFeatures, BestIsaIsSupported) {
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_FALSE(cpu_model_name().empty());
  EXPECT_STREQ(to_string(Isa::kAvx2), "avx2");
}

}  // namespace
}  // namespace trex::core
