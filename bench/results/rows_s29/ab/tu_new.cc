// One build of swiglu.cc under its own names, for a one-process A/B.
#define swiglu_forward swiglu_forward_new
#define swiglu_backward swiglu_backward_new
#define swiglu_forward_ref swiglu_forward_ref_new
#define swiglu_backward_ref swiglu_backward_ref_new
#include "/work/wt/rows29/src/trex/kernels/swiglu.cc"
