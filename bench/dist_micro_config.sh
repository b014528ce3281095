# Sourced by bench/dist_compare.sh and bench/dist_plan_compare.sh: the v4-micro training run
# both measure (MTP on, AdamW, one row per micro-batch, no checkpoints but the last).
#   write_micro_config FILE SRC_DIR SEQ MICRO_BATCHES STEPS
write_micro_config() {
  cat > "$1" <<TOML
[run]
model = "$2/configs/model/v4-micro.toml"
seed = 1
seq = $3
rows = 1
micro_batches = $4
steps = $5
mtp = true
log_every = 1
[tokenizer]
sample_bytes = 1000000
[optimizer]
kind = "adamw"
lr = 2e-3
warmup = 1
[checkpoint]
every = 0
keep_last = 1
[[data]]
kind = "text"
path = "/usr/share/common-licenses"
TOML
}
