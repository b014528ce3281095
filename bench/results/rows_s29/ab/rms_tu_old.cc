#define rmsnorm_forward rmsnorm_forward_old
#define rmsnorm_backward rmsnorm_backward_old
#define rmsnorm_forward_ref rmsnorm_forward_ref_old
#define rmsnorm_backward_ref rmsnorm_backward_ref_old
#include "/work/wt/rows29-base/src/trex/kernels/rmsnorm.cc"
