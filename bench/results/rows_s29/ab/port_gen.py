# generates port.cc (session 29 rows, the port probe): for each instruction X, a loop of 8 independent zmm FMAs plus K = 4 or 8 copies of X, timed by rdtsc; prints the extra time in FMA slots (1.0 a copy: X takes an FMA-pipe slot)
tests = {
 "none": [],
 "vaddps": ["vaddps %%zmm30, %%zmm31, %%zmm{r}"],
 "vmulps": ["vmulps %%zmm30, %%zmm31, %%zmm{r}"],
 "vminps": ["vminps %%zmm30, %%zmm31, %%zmm{r}"],
 "vrangeps": ["vrangeps $2, %%zmm30, %%zmm31, %%zmm{r}"],
 "vreduceps": ["vreduceps $9, %%zmm30, %%zmm{r}"],
 "vscalefps": ["vscalefps %%zmm30, %%zmm31, %%zmm{r}"],
 "vrcp14ps": ["vrcp14ps %%zmm30, %%zmm{r}"],
 "vcmpps": ["vcmpleps %%zmm30, %%zmm31, %%k{k}"],
 "vpcmpeqd": ["vpcmpeqd %%zmm30, %%zmm31, %%k{k}"],
 "vpcmpud": ["vpcmpleud %%zmm30, %%zmm31, %%k{k}"],
 "vfpclassps": ["vfpclassps $0x20, %%zmm30, %%k{k}"],
 "korw": ["korw %%k1, %%k2, %%k{k}"],
 "vpslld": ["vpslld $16, %%zmm30, %%zmm{r}"],
 "vpandd": ["vpandd %%zmm30, %%zmm31, %%zmm{r}"],
 "vpaddd": ["vpaddd %%zmm30, %%zmm31, %%zmm{r}"],
 "vpminud": ["vpminud %%zmm30, %%zmm31, %%zmm{r}"],
 "vpermw": ["vpermw %%zmm30, %%zmm31, %%zmm{r}"],
 "vcvtne2ps": ["vcvtne2ps2bf16 %%zmm30, %%zmm31, %%zmm{r}"],
 "vblendmps": ["vblendmps %%zmm30, %%zmm31, %%zmm{r}%{%%k1%}"],
 "vmulps_kz": ["vmulps %%zmm30, %%zmm31, %%zmm{r}%{%%k1%}%{z%}"],
 "vpternlogd": ["vpternlogd $0x96, %%zmm30, %%zmm31, %%zmm{r}"],
 "vpsrld": ["vpsrld $16, %%zmm30, %%zmm{r}"],
 "vcvtne2ps_ymm": ["vcvtne2ps2bf16 %%ymm30, %%ymm31, %%ymm{r}"],
 "vmovntdq": ["vmovntdq %%zmm{r}, (%0)"],
 "vmovdqu64st": ["vmovdqu64 %%zmm{r}, (%0)"],
 "vpmovzxwd": ["vpmovzxwd (%0), %%zmm{r}"],
 "vpslld_mem": ["vpslld $16, (%0), %%zmm{r}"],
 "vpunpcklwd": ["vpunpcklwd %%zmm30, %%zmm31, %%zmm{r}"],
 "vpshufb": ["vpshufb %%zmm30, %%zmm31, %%zmm{r}"],
 "vpermt2w": ["vpermt2w %%zmm30, %%zmm31, %%zmm{r}"],
 "vcvtneps_pbh": ["vcvtneps2bf16 %%zmm30, %%ymm{r}"],
 "vpsrlq": ["vpsrlq $16, %%zmm30, %%zmm{r}"],
 "vpshldd": ["vpshldd $16, %%zmm30, %%zmm31, %%zmm{r}"],
 "vpmovdw": ["vpmovdw %%zmm30, %%ymm{r}"],
 "kortestw": ["kortestw %%k1, %%k2"],
 "vpmovd2m": ["vpmovd2m %%zmm30, %%k{k}"],
 "vptestmd": ["vptestmd %%zmm30, %%zmm31, %%k{k}"],
 "vpmovm2d": ["vpmovm2d %%k1, %%zmm{r}"],
 "vpsrad": ["vpsrad $31, %%zmm30, %%zmm{r}"],
 "vpsubd": ["vpsubd %%zmm30, %%zmm31, %%zmm{r}"],
 "vpminsd": ["vpminsd %%zmm30, %%zmm31, %%zmm{r}"],
 "vandps": ["vandps %%zmm30, %%zmm31, %%zmm{r}"],
 "vsubps": ["vsubps %%zmm30, %%zmm31, %%zmm{r}"],
 "vmaxps": ["vmaxps %%zmm30, %%zmm31, %%zmm{r}"],
 "vcmpps_ymm": ["vcmpps $2, %%ymm14, %%ymm15, %%ymm{r}"],
 "vpcmpgtd_ymm": ["vpcmpgtd %%ymm14, %%ymm15, %%ymm{r}"],
 "vfma_ymm": ["vfmadd231ps %%ymm30, %%ymm31, %%ymm{r}"],
 "vmovaps_k": ["vmovaps %%zmm30, %%zmm{r}%{%%k1%}%{z%}"],
 "vandps_k": ["vandps %%zmm30, %%zmm31, %%zmm{r}%{%%k1%}%{z%}"],
 "vpandd_kz": ["vpandd %%zmm30, %%zmm31, %%zmm{r}%{%%k1%}%{z%}"],
 "kandw": ["kandw %%k1, %%k2, %%k{k}"],
 "vpsravd": ["vpsravd %%zmm30, %%zmm31, %%zmm{r}"],
 "vrsqrt14": ["vrsqrt14ps %%zmm30, %%zmm{r}"],
 "vroundscale": ["vrndscaleps $1, %%zmm30, %%zmm{r}"],
 "vcvtps2dq": ["vcvtps2dq %%zmm30, %%zmm{r}"],
 "vcvtdq2ps": ["vcvtdq2ps %%zmm30, %%zmm{r}"],
 "vgetexpps": ["vgetexpps %%zmm30, %%zmm{r}"],
 "vfixupimmps": ["vfixupimmps $0, %%zmm30, %%zmm31, %%zmm{r}"],
}
out = ['#include <cstdio>', '#include <x86intrin.h>', '#include <algorithm>', '#include <vector>', 'alignas(64) static char buf[4096];']
for name, ins in tests.items():
    for K in (0, 4, 8):
        if name == "none" and K: continue
        body = []
        for i in range(8):
            body.append(f'"vfmadd231ps %%zmm30, %%zmm31, %%zmm{i}\\n\\t"')
            if i < K:
                body.append('"' + ins[0].replace("{r}", str(8 + i)).replace("{k}", str(3 + i % 4)) + '\\n\\t"')
        fn = f'static void f_{name}_{K}(long n) {{ for (long i = 0; i < n; ++i) asm volatile({" ".join(body)} :: "r"(buf) : "memory", "k3", "k4", "k5", "k6"); }}'
        out.append(fn)
out.append('template <class F> double t(F f) { std::vector<double> v; for (int r = 0; r < 7; ++r) { unsigned long a = __rdtsc(); f(200000); v.push_back(double(__rdtsc() - a) / 200000); } std::sort(v.begin(), v.end()); return v[3]; }')
out.append('int main() { asm volatile("vxorps %%zmm30,%%zmm30,%%zmm30\\n\\tvxorps %%zmm31,%%zmm31,%%zmm31\\n\\tkxnorw %%k1,%%k1,%%k1\\n\\tkxnorw %%k2,%%k2,%%k2" ::: "k1","k2");')
out.append('  double base = t(f_none_0); std::printf("8 fma: %.2f tsc/iter\\n", base);')
for name in tests:
    if name == "none": continue
    out.append(f'  {{ double a = t(f_{name}_4), b = t(f_{name}_8); std::printf("%-14s +4: %+.2f  +8: %+.2f  (x fma-slot)\\n", "{name}", (a - base) / base * 8, (b - base) / base * 8); }}')
out.append('}')
open('port.cc', 'w').write('\n'.join(out) + '\n')
