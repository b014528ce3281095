#define rmsnorm_forward rmsnorm_forward_new
#define rmsnorm_backward rmsnorm_backward_new
#define rmsnorm_forward_ref rmsnorm_forward_ref_new
#define rmsnorm_backward_ref rmsnorm_backward_ref_new
#include "/work/wt/rows29/src/trex/kernels/rmsnorm.cc"
