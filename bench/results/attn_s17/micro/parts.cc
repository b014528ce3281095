// column_dots_part: the experiment "window scores quarter by quarter across the group" (not
// kept). Included after attention_tiles.cc by new.cc (uses its file-local helpers).
namespace trex::kernels::attn_detail {
namespace {
template <int R, int NV>
inline void column_block_part(int part, int64_t K, const float* const ar[R], int64_t rows,
                              const float* kT, int64_t ldk, int64_t j, int64_t end, float alpha,
                              float* C, int64_t ldc, float* P01, float* P2, int64_t ldp) {
  const int64_t qk = column_quarter(K);
  auto bound = [&](int p) { return std::min<int64_t>(K, p * qk); };
  V c[R][NV];
  column_chains<R, NV>(ar, kT, ldk, j, bound(part), part == 3 ? K : bound(part + 1), c);
  const V va = vset(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    float* p01 = P01 + r * ldp + j;
    float* p2 = P2 + r * ldp + j;
    float* dst = C + r * ldc + j;
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) {
      if (part == 0) {
        vstore(p01 + q * W, c[r][q]);
      } else if (part == 1) {
        vstore(p01 + q * W, vadd(vload(p01 + q * W), c[r][q]));
      } else if (part == 2) {
        vstore(p2 + q * W, c[r][q]);
      } else {
        const V x = vmul(va, vadd(vload(p01 + q * W), vadd(vload(p2 + q * W), c[r][q])));
        const int64_t left = end - (j + q * W);
        if (left >= W) {
          vstore(dst + q * W, x);
        } else {
          alignas(64) float tmp[W];
          vstore(tmp, x);
          for (int64_t l = 0; l < left; ++l) dst[q * W + l] = tmp[l];
        }
      }
    }
  }
}
template <int R>
void column_group_part(int part, int64_t N, int64_t K, const float* const ar[R], int64_t rows,
                       const float* kT, int64_t ldk, float alpha, float* Ci, int64_t ldc,
                       float* P01, float* P2, int64_t ldp) {
  constexpr int NV = 16 / R;
  int64_t j = 0;
  for (; j + (NV - 1) * W < N; j += NV * W)
    column_block_part<R, NV>(part, K, ar, rows, kT, ldk, j, N, alpha, Ci, ldc, P01, P2, ldp);
  for (; j < N; j += W)
    column_block_part<R, 1>(part, K, ar, rows, kT, ldk, j, N, alpha, Ci, ldc, P01, P2, ldp);
}
}  // namespace
void column_dots_part(int part, int64_t M, int64_t N, int64_t K, const float* const* a,
                      const float* kT, int64_t ldk, float alpha, float* C, int64_t ldc, float* P01,
                      float* P2, int64_t ldp) {
  int64_t i0 = 0;
  for (; i0 + 8 <= M; i0 += 8)
    column_group_part<8>(part, N, K, a + i0, 8, kT, ldk, alpha, C + i0 * ldc, ldc, P01 + i0 * ldp,
                         P2 + i0 * ldp, ldp);
  for (; i0 < M; i0 += 4) {
    const float* ar[4];
    for (int r = 0; r < 4; ++r) ar[r] = a[std::min(i0 + r, M - 1)];
    column_group_part<4>(part, N, K, ar, std::min<int64_t>(4, M - i0), kT, ldk, alpha,
                         C + i0 * ldc, ldc, P01 + i0 * ldp, P2 + i0 * ldp, ldp);
  }
}
}  // namespace trex::kernels::attn_detail
