# usage: TREX_TUNING=any.toml gdb -batch -x THIS --args build/model_step_bench configs/model/v4-micro.toml --seq 2048 --steps 1 --warmup 0 --mtp
# Which calls of a v4-micro step fall in GEMM class 8192x512x512 (m in 4097..8192, n and k in 257..512):
# gemm_blocking_for returns its struct through rdi, so m, n, k are rsi, rdx, rcx.
set pagination off
set print thread-events off
break trex::kernels::gemm_blocking_for if $rsi > 4096 && $rsi <= 8192 && $rdx > 256 && $rdx <= 512 && $rcx > 256 && $rcx <= 512
commands
silent
printf "HIT m=%ld n=%ld k=%ld\n", $rsi, $rdx, $rcx
bt 8
continue
end
run
quit
