// Session 30 (mhc): g++ -O2 -march=native port_probe.cc; run in the nice -20 lane. Modes 20-22 are FMAs with load operands only (no separate ops).
// Port probe: cycles per iteration of loops mixing 512-bit FMAs with shuffles (Zen 4 VM).
#include <immintrin.h>
#include <cstdio>
#include <ctime>
#include <cstring>
static double now(){timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
alignas(64) static unsigned short src[4096];
alignas(64) static float fsrc[4096];
#define ACC12 __m512 a0=_mm512_set1_ps(0),a1=_mm512_set1_ps(1),a2=_mm512_set1_ps(2),a3=_mm512_set1_ps(3),a4=_mm512_set1_ps(4),a5=_mm512_set1_ps(5),a6=_mm512_set1_ps(6),a7=_mm512_set1_ps(7),a8=_mm512_set1_ps(8),a9=_mm512_set1_ps(9),a10=_mm512_set1_ps(10),a11=_mm512_set1_ps(11); asm volatile("" : "+v"(a0),"+v"(a1),"+v"(a2),"+v"(a3),"+v"(a4),"+v"(a5),"+v"(a6),"+v"(a7),"+v"(a8),"+v"(a9),"+v"(a10),"+v"(a11));
#define SUMACC (a0+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11)
#define F12(x,w) a0=_mm512_fmadd_ps(x,w,a0);a1=_mm512_fmadd_ps(x,w,a1);a2=_mm512_fmadd_ps(x,w,a2);a3=_mm512_fmadd_ps(x,w,a3);a4=_mm512_fmadd_ps(x,w,a4);a5=_mm512_fmadd_ps(x,w,a5);a6=_mm512_fmadd_ps(x,w,a6);a7=_mm512_fmadd_ps(x,w,a7);a8=_mm512_fmadd_ps(x,w,a8);a9=_mm512_fmadd_ps(x,w,a9);a10=_mm512_fmadd_ps(x,w,a10);a11=_mm512_fmadd_ps(x,w,a11);
volatile float sink;
template<int MODE> double run(long n){
  ACC12
  __m512 w=_mm512_set1_ps(1.0001f);
  __m512i r0=_mm512_load_si512(src),r1=_mm512_load_si512(src+32),r2=_mm512_load_si512(src+64),r3=_mm512_load_si512(src+96);
  __m512i idx=_mm512_set1_epi16(3), idx2=_mm512_set1_epi16(5);
  __m512 x0=_mm512_castsi512_ps(r0), x1=x0, x2=x0,x3=x0;
  double t0=now();
  for(long i=0;i<n;i++){
    asm volatile("" : "+v"(r0),"+v"(r1),"+v"(r2),"+v"(r3),"+v"(idx),"+v"(idx2));
    if constexpr(MODE==1){ // 4 vpermt2w per 12 FMA
      x0=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx,r1));
      x1=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx,r3));
      x2=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx2,r1));
      x3=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx2,r3));
    } else if constexpr(MODE==2){ // 4 vshufi64x2
      x0=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r1,0x44));
      x1=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r2,r3,0x44));
      x2=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r1,0xee));
      x3=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r2,r3,0xee));
    } else if constexpr(MODE==3){ // 2 slli + 2 and
      x0=_mm512_castsi512_ps(_mm512_slli_epi32(r0,16));
      x1=_mm512_castsi512_ps(_mm512_and_si512(r1,idx));
      x2=_mm512_castsi512_ps(_mm512_slli_epi32(r2,16));
      x3=_mm512_castsi512_ps(_mm512_and_si512(r3,idx));
    } else if constexpr(MODE==4){ // 4 vpermw (1 source)
      x0=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r0));
      x1=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r1));
      x2=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r2));
      x3=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r3));
    } else if constexpr(MODE==5){ // 4 vpermt2d
      x0=_mm512_castsi512_ps(_mm512_permutex2var_epi32(r0,idx,r1));
      x1=_mm512_castsi512_ps(_mm512_permutex2var_epi32(r2,idx,r3));
      x2=_mm512_castsi512_ps(_mm512_permutex2var_epi32(r0,idx2,r1));
      x3=_mm512_castsi512_ps(_mm512_permutex2var_epi32(r2,idx2,r3));
    } else if constexpr(MODE==6){ // 4 vpmovzxwd zmm from ymm + (no shift)
      x0=_mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(r0)));
      x1=_mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(r1)));
      x2=_mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(r2)));
      x3=_mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(r3)));
    } else if constexpr(MODE==7){ // 4 vpunpcklwd/hwd with zero
      __m512i z=_mm512_setzero_si512();
      x0=_mm512_castsi512_ps(_mm512_unpacklo_epi16(z,r0));
      x1=_mm512_castsi512_ps(_mm512_unpackhi_epi16(z,r1));
      x2=_mm512_castsi512_ps(_mm512_unpacklo_epi16(z,r2));
      x3=_mm512_castsi512_ps(_mm512_unpackhi_epi16(z,r3));
    } else if constexpr(MODE==8){ // 4 vbroadcastf32x8 from memory (pure loads?)
      x0=_mm512_broadcast_f32x8(_mm256_load_ps(fsrc+(i&63)*8));
      x1=_mm512_broadcast_f32x8(_mm256_load_ps(fsrc+(i&63)*8+8));
      x2=_mm512_broadcast_f32x8(_mm256_load_ps(fsrc+(i&63)*8+16));
      x3=_mm512_broadcast_f32x8(_mm256_load_ps(fsrc+(i&63)*8+24));
    } else if constexpr(MODE==9){ // 4 fpclass + cvtne2 
      __mmask16 m=_mm512_fpclass_ps_mask(_mm512_castsi512_ps(r0),0x20)|_mm512_fpclass_ps_mask(_mm512_castsi512_ps(r1),0x20);
      __mmask16 m2=_mm512_fpclass_ps_mask(_mm512_castsi512_ps(r2),0x20)|_mm512_fpclass_ps_mask(_mm512_castsi512_ps(r3),0x20);
      asm volatile("" :: "k"(m),"k"(m2));
    } else if constexpr(MODE==10){ // 4 vcvtne2ps2bf16
      x0=(__m512)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(r0),_mm512_castsi512_ps(r1));
      x1=(__m512)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(r2),_mm512_castsi512_ps(r3));
      x2=(__m512)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(r1),_mm512_castsi512_ps(r2));
      x3=(__m512)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(r3),_mm512_castsi512_ps(r0));
    } else if constexpr(MODE==11){ // 4 vinserti32x4 from memory (masked bcast)
      __m512i v=_mm512_castsi128_si512(_mm_load_si128((const __m128i*)(src+(i&63)*8)));
      v=_mm512_inserti32x4(v,_mm_load_si128((const __m128i*)(src+(i&63)*8+64)),1);
      v=_mm512_inserti32x4(v,_mm_load_si128((const __m128i*)(src+(i&63)*8+128)),2);
      v=_mm512_inserti32x4(v,_mm_load_si128((const __m128i*)(src+(i&63)*8+192)),3);
      x0=_mm512_castsi512_ps(v);
    } else if constexpr(MODE==12){ // 2 maskz vpermw + 2 merge vpermw
      __m512i p0=_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r0);
      __m512i p1=_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r2);
      x0=_mm512_castsi512_ps(_mm512_mask_permutexvar_epi16(p0,0xaaaa0000u,idx2,r1));
      x1=_mm512_castsi512_ps(_mm512_mask_permutexvar_epi16(p1,0xaaaa0000u,idx2,r3));
      x2=x0; x3=x1;
    } else if constexpr(MODE==13){ // 4 vpcmpud -> k
      __mmask16 m=_mm512_cmplt_epu32_mask(r0,idx)|_mm512_cmplt_epu32_mask(r1,idx);
      __mmask16 m2=_mm512_cmplt_epu32_mask(r2,idx)|_mm512_cmplt_epu32_mask(r3,idx);
      asm volatile("" :: "k"(m),"k"(m2));
    } else if constexpr(MODE==14){ // 4 vptestmd -> k
      __mmask16 m=_mm512_test_epi32_mask(r0,idx)|_mm512_test_epi32_mask(r1,idx);
      __mmask16 m2=_mm512_test_epi32_mask(r2,idx)|_mm512_test_epi32_mask(r3,idx);
      asm volatile("" :: "k"(m),"k"(m2));
    } else if constexpr(MODE==15){ // 4 vpaddd + 2 vpminud
      x0=_mm512_castsi512_ps(_mm512_min_epu32(_mm512_add_epi32(r0,idx),_mm512_add_epi32(r1,idx)));
      x1=_mm512_castsi512_ps(_mm512_min_epu32(_mm512_add_epi32(r2,idx),_mm512_add_epi32(r3,idx)));
      x2=x0;x3=x1;
    } else if constexpr(MODE==16){ // 4 vmulps (compete with fma?)
      x0=_mm512_mul_ps(_mm512_castsi512_ps(r0),_mm512_castsi512_ps(r1));
      x1=_mm512_mul_ps(_mm512_castsi512_ps(r2),_mm512_castsi512_ps(r3));
      x2=_mm512_mul_ps(_mm512_castsi512_ps(r1),_mm512_castsi512_ps(r2));
      x3=_mm512_mul_ps(_mm512_castsi512_ps(r3),_mm512_castsi512_ps(r0));
    } else if constexpr(MODE==17){ // 8 vpermw maskz
      x0=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r0));
      x1=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r1));
      x2=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r2));
      x3=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r3));
      __m512 y0=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r0));
      __m512 y1=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx2,r1));
      __m512 y2=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r2));
      __m512 y3=_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau,idx,r3));
      asm volatile("" :: "v"(y0),"v"(y1),"v"(y2),"v"(y3));
    } else if constexpr(MODE==19){ // 4 vbroadcastf32x4 m128
      x0=_mm512_broadcast_f32x4(_mm_load_ps(fsrc+(i&63)*8));
      x1=_mm512_broadcast_f32x4(_mm_load_ps(fsrc+(i&63)*8+8));
      x2=_mm512_broadcast_f32x4(_mm_load_ps(fsrc+(i&63)*8+16));
      x3=_mm512_broadcast_f32x4(_mm_load_ps(fsrc+(i&63)*8+24));
    } else if constexpr(MODE==20){ // 12 FMA each with its own vbroadcastf32x4 operand (like the kernel)
      const float* q=fsrc+(i&31)*64;
      a0=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q)),w,a0);a1=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+4)),w,a1);
      a2=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+8)),w,a2);a3=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+12)),w,a3);
      a4=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+16)),w,a4);a5=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+20)),w,a5);
      a6=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+24)),w,a6);a7=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+28)),w,a7);
      a8=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+32)),w,a8);a9=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+36)),w,a9);
      a10=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+40)),w,a10);a11=_mm512_fmadd_ps(_mm512_broadcast_f32x4(_mm_load_ps(q+44)),w,a11);
    } else if constexpr(MODE==21){ // 12 FMA each with its own vbroadcastf32x8 operand
      const float* q=fsrc+(i&31)*96;
      a0=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q)),w,a0);a1=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+8)),w,a1);
      a2=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+16)),w,a2);a3=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+24)),w,a3);
      a4=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+32)),w,a4);a5=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+40)),w,a5);
      a6=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+48)),w,a6);a7=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+56)),w,a7);
      a8=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+64)),w,a8);a9=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+72)),w,a9);
      a10=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+80)),w,a10);a11=_mm512_fmadd_ps(_mm512_broadcast_f32x8(_mm256_load_ps(q+88)),w,a11);
    } else if constexpr(MODE==22){ // 12 FMA each with its own full zmm load
      const float* q=fsrc+(i&15)*192;
      a0=_mm512_fmadd_ps(_mm512_load_ps(q),w,a0);a1=_mm512_fmadd_ps(_mm512_load_ps(q+16),w,a1);
      a2=_mm512_fmadd_ps(_mm512_load_ps(q+32),w,a2);a3=_mm512_fmadd_ps(_mm512_load_ps(q+48),w,a3);
      a4=_mm512_fmadd_ps(_mm512_load_ps(q+64),w,a4);a5=_mm512_fmadd_ps(_mm512_load_ps(q+80),w,a5);
      a6=_mm512_fmadd_ps(_mm512_load_ps(q+96),w,a6);a7=_mm512_fmadd_ps(_mm512_load_ps(q+112),w,a7);
      a8=_mm512_fmadd_ps(_mm512_load_ps(q+128),w,a8);a9=_mm512_fmadd_ps(_mm512_load_ps(q+144),w,a9);
      a10=_mm512_fmadd_ps(_mm512_load_ps(q+160),w,a10);a11=_mm512_fmadd_ps(_mm512_load_ps(q+176),w,a11);
    } else if constexpr(MODE==23){ // 8 slli + 8 and
      __m512i u0=_mm512_slli_epi32(r0,16),u1=_mm512_slli_epi32(r1,16),u2=_mm512_slli_epi32(r2,16),u3=_mm512_slli_epi32(r3,16);
      __m512i u4=_mm512_slli_epi32(r0,8),u5=_mm512_slli_epi32(r1,8),u6=_mm512_slli_epi32(r2,8),u7=_mm512_slli_epi32(r3,8);
      __m512i v0=_mm512_and_si512(r0,idx),v1=_mm512_and_si512(r1,idx),v2=_mm512_and_si512(r2,idx),v3=_mm512_and_si512(r3,idx);
      __m512i v4=_mm512_and_si512(r0,idx2),v5=_mm512_and_si512(r1,idx2),v6=_mm512_and_si512(r2,idx2),v7=_mm512_and_si512(r3,idx2);
      asm volatile("" :: "v"(u0),"v"(u1),"v"(u2),"v"(u3),"v"(u4),"v"(u5),"v"(u6),"v"(u7));
      asm volatile("" :: "v"(v0),"v"(v1),"v"(v2),"v"(v3),"v"(v4),"v"(v5),"v"(v6),"v"(v7));
    } else if constexpr(MODE==24){ // 12 slli
      __m512i u0=_mm512_slli_epi32(r0,16),u1=_mm512_slli_epi32(r1,16),u2=_mm512_slli_epi32(r2,16),u3=_mm512_slli_epi32(r3,16);
      __m512i u4=_mm512_slli_epi32(r0,8),u5=_mm512_slli_epi32(r1,8),u6=_mm512_slli_epi32(r2,8),u7=_mm512_slli_epi32(r3,8);
      __m512i v0=_mm512_slli_epi32(r0,4),v1=_mm512_slli_epi32(r1,4),v2=_mm512_slli_epi32(r2,4),v3=_mm512_slli_epi32(r3,4);
      asm volatile("" :: "v"(u0),"v"(u1),"v"(u2),"v"(u3),"v"(u4),"v"(u5),"v"(u6),"v"(u7));
      asm volatile("" :: "v"(v0),"v"(v1),"v"(v2),"v"(v3));
    } else if constexpr(MODE==25){ // 8 vpermt2w
      x0=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx,r1));
      x1=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx,r3));
      x2=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx2,r1));
      x3=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx2,r3));
      __m512 y0=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r1,idx,r0));
      __m512 y1=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r3,idx,r2));
      __m512 y2=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r1,idx2,r0));
      __m512 y3=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r3,idx2,r2));
      asm volatile("" :: "v"(y0),"v"(y1),"v"(y2),"v"(y3));
    } else if constexpr(MODE==26){ // 4 vpermt2w + 4 vshufi64x2
      x0=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx,r1));
      x1=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx,r3));
      x2=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r0,idx2,r1));
      x3=_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(0xaaaaaaaau,r2,idx2,r3));
      __m512 y0=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r2,0x44));
      __m512 y1=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r1,r3,0x44));
      __m512 y2=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r2,0xee));
      __m512 y3=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r1,r3,0xee));
      asm volatile("" :: "v"(y0),"v"(y1),"v"(y2),"v"(y3));
    } else if constexpr(MODE==18){ // 8 vshufi64x2
      x0=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r1,0x44));
      x1=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r2,r3,0x44));
      x2=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r1,0xee));
      x3=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r2,r3,0xee));
      __m512 y0=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r2,0x44));
      __m512 y1=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r1,r3,0x44));
      __m512 y2=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r0,r2,0xee));
      __m512 y3=_mm512_castsi512_ps(_mm512_shuffle_i64x2(r1,r3,0xee));
      asm volatile("" :: "v"(y0),"v"(y1),"v"(y2),"v"(y3));
    }
    if constexpr(MODE>=20 && MODE<=22){} else if constexpr(MODE==0||MODE==9||MODE==13||MODE==14){ F12(x0,w) }
    else { F12(x0,w) asm volatile("" :: "v"(x1),"v"(x2),"v"(x3)); }
  }
  double t=now()-t0;
  sink=_mm512_reduce_add_ps(SUMACC);
  return t;
}
// latency probe: dependent FMA chain, 4 cycles each on Zen 4
double lat(long n){ __m512 a=_mm512_set1_ps(1.f),w=_mm512_set1_ps(1.0000001f); double t0=now(); for(long i=0;i<n;i++){a=_mm512_fmadd_ps(a,w,w);} double t=now()-t0; sink=_mm512_reduce_add_ps(a); return t;}
int main(int argc,char**argv){
  for(int i=0;i<4096;i++){src[i]=i*7;fsrc[i]=i;}
  long n=20000000;
  double best=1e9; for(int k=0;k<5;k++){double t=lat(n); if(t<best)best=t;}
  double ghz=4.0*n/best/1e9; printf("clock %.2f GHz (FMA latency 4)\n",ghz);
  const char* names[]={"12 FMA","12 FMA+4 vpermt2w(maskz)","12 FMA+4 vshufi64x2","12 FMA+2 slli+2 and","12 FMA+4 vpermw(maskz)","12 FMA+4 vpermt2d","12 FMA+4 vpmovzxwd","12 FMA+4 vpunpck wd","12 FMA+4 vbroadcastf32x8 m256","12 FMA+4 fpclass","12 FMA+4 vcvtne2ps2bf16","12 FMA+1 load128+3 vinserti32x4 m128","12 FMA+2 maskz vpermw+2 merge vpermw","12 FMA+4 vpcmpud->k","12 FMA+4 vptestmd->k","12 FMA+4 vpaddd+2 vpminud","12 FMA+4 vmulps","12 FMA+8 vpermw","12 FMA+8 vshufi64x2","12 FMA+4 vbroadcastf32x4","12 FMA(bcast f32x4 operand each)","12 FMA(bcast f32x8 operand each)","12 FMA(zmm load operand each)","12 FMA+8 slli+8 and","12 FMA+12 slli","12 FMA+8 vpermt2w","12 FMA+4 vpermt2w+4 vshufi64x2"};
  double (*f[])(long)={run<0>,run<1>,run<2>,run<3>,run<4>,run<5>,run<6>,run<7>,run<8>,run<9>,run<10>,run<11>,run<12>,run<13>,run<14>,run<15>,run<16>,run<17>,run<18>,run<19>,run<20>,run<21>,run<22>,run<23>,run<24>,run<25>,run<26>};
  for(int m=0;m<27;m++){ double b=1e9; for(int k=0;k<5;k++){double t=f[m](n); if(t<b)b=t;} printf("%-40s %.2f cycles/iter\n",names[m],b*ghz*1e9/n);}
}
