#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "trex/core/tensor.h"

namespace trex::core {
namespace {

TEST(Tensor, ShapeBasics) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.ndim, 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_TRUE((Shape{2, 3} == Shape{2, 3}));
  EXPECT_FALSE((Shape{2, 3} == Shape{3, 2}));
  EXPECT_THROW((Shape{1, 2, 3, 4, 5}), std::invalid_argument);
  EXPECT_THROW((Shape{2, -1}), std::invalid_argument);
}

TEST(Tensor, ContiguousStridesAndOffsets) {
  std::vector<float> buf(2 * 3 * 4);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);
  TensorView v(buf.data(), DType::kF32, {2, 3, 4});
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.stride(1), 4);
  EXPECT_EQ(v.stride(2), 1);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.offset(1, 2, 3), 23);
  EXPECT_EQ(v.at<float>(1, 0, 2), 14.0f);
  EXPECT_EQ(v.get(0, 2, 1), 9.0f);
  v.set(-1.0f, 1, 1, 1);
  EXPECT_EQ(buf[17], -1.0f);
  TensorView four(buf.data(), DType::kF32, {1, 2, 3, 4});
  EXPECT_EQ(four.offset(0, 1, 2, 3), 23);
}

TEST(Tensor, TransposeAndSliceShareMemory) {
  std::vector<float> buf(3 * 5);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);
  TensorView m(buf.data(), DType::kF32, {3, 5});
  TensorView t = m.transpose(0, 1);
  EXPECT_EQ(t.size(0), 5);
  EXPECT_EQ(t.size(1), 3);
  EXPECT_EQ(t.stride(0), 1);
  EXPECT_EQ(t.stride(1), 5);
  EXPECT_FALSE(t.is_contiguous());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(t.get(j, i), m.get(i, j));

  TensorView cols = m.slice(1, 1, 4);  // columns 1..3
  EXPECT_EQ(cols.size(1), 3);
  EXPECT_EQ(cols.get(2, 0), 11.0f);
  EXPECT_FALSE(cols.is_contiguous());
  TensorView rows = m.slice(0, 1, 3);  // rows 1..2: still contiguous
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.get(0, 0), 5.0f);
  EXPECT_THROW(m.slice(1, 2, 6), std::out_of_range);
  EXPECT_THROW(m.transpose(0, 2), std::out_of_range);
}

TEST(Tensor, Reshape) {
  std::vector<float> buf(24);
  TensorView v(buf.data(), DType::kF32, {2, 3, 4});
  TensorView r = v.reshape({6, 4});
  EXPECT_EQ(r.stride(0), 4);
  EXPECT_EQ(r.raw(), v.raw());
  EXPECT_THROW(v.reshape({5, 5}), std::invalid_argument);
  EXPECT_THROW(v.transpose(0, 2).reshape({24}), std::invalid_argument);
}

TEST(Tensor, Bf16ElementsRoundOnSet) {
  std::vector<bf16> buf(4);
  TensorView v(buf.data(), DType::kBF16, {2, 2});
  EXPECT_EQ(v.element_bytes(), 2u);
  v.set(1.00390625f, 0, 1);  // a tie: rounds to even, 1.0
  EXPECT_EQ(v.get(0, 1), 1.0f);
  v.set(3.0f, 1, 0);
  EXPECT_EQ(v.at<bf16>(1, 0).bits, 0x4040);
}

TEST(Tensor, OwningTensorIsAlignedZeroedAndMovable) {
  Tensor t(DType::kF32, {3, 7});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data<float>()) % 64, 0u);
  EXPECT_EQ(t.bytes(), 3u * 7u * 4u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  t.view().set(2.5f, 2, 6);
  Tensor moved = std::move(t);
  EXPECT_EQ(moved.view().get(2, 6), 2.5f);
  Tensor h = Tensor::empty(DType::kBF16, {5});
  EXPECT_EQ(h.dtype(), DType::kBF16);
  EXPECT_EQ(h.bytes(), 10u);
  EXPECT_STREQ(to_string(DType::kBF16), "bf16");
  Tensor none = Tensor::zeros(DType::kF32, {0, 4});
  EXPECT_EQ(none.numel(), 0);
}

}  // namespace
}  // namespace trex::core
