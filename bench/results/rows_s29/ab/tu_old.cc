// One build of swiglu.cc under its own names, for a one-process A/B.
#define swiglu_forward swiglu_forward_old
#define swiglu_backward swiglu_backward_old
#define swiglu_forward_ref swiglu_forward_ref_old
#define swiglu_backward_ref swiglu_backward_ref_old
#include "/work/wt/rows29-base/src/trex/kernels/swiglu.cc"
