#!/usr/bin/env python3
"""Can a model shape learn to copy numbers at all (issue 16)? Writes a synthetic SFT corpus and a train config.

    python3 bench/recipe_copy_probe.py --model configs/model/mini-nano-dense.toml --out DIR [--steps 300]
    trex train DIR/probe.toml --out DIR/run        # then read DIR/run/metrics.jsonl's loss

The miniature recipe's SFT models write each family's program but not the statement's numbers
(bench/recipe_copy_nll.py). This probe isolates the copying: every conversation is "Numbers: 528 18
4943 ... Repeat them." and the answer is the same twelve numbers (1-4 digits each) in the same
order, loss on the answer only. A model that cannot copy stays near chance (about 2.1 nats a
token: a digit is 2.3, a space less); one that has learned to copy falls towards 0. Comparing two
model files on the same corpus, seed and steps says which shape learns to copy sooner. The corpus
is written under a temporary name and renamed, like the config.
"""
import argparse
import json
import os
import random

CONFIG = """# Copy probe (bench/recipe_copy_probe.py): SFT from scratch on {count} synthetic copy conversations.
[run]
model = "{model}"
mode = "sft"
seed = 3
seq = 512
rows = 2
packing = "first-fit"
steps = {steps}
log_every = 10

[tokenizer]
sample_bytes = 200000

[optimizer]
lr = 2e-3
min_lr = 2e-4
warmup = 20
weight_decay = 0.0

[checkpoint]
every = 100000
keep_last = 1

[[data]]
name = "copy"
kind = "sft"
path = "{corpus}"
weight = 1.0
"""


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a model config (configs/model/*.toml)")
    ap.add_argument("--out", required=True, help="folder for copy.jsonl and probe.toml")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        raise SystemExit(f"recipe_copy_probe: --model {a.model}: no such file")
    os.makedirs(a.out, exist_ok=True)
    r = random.Random(a.seed)
    lines = []
    for _ in range(a.count):
        digits = [r.randint(1, 4) for _ in range(12)]
        nums = [str(r.randrange(10 ** (k - 1) if k > 1 else 0, 10 ** k)) for k in digits]
        question = "Numbers: " + " ".join(nums) + "\nRepeat them."
        lines.append(json.dumps({"messages": [{"role": "user", "content": question},
                                              {"role": "assistant", "content": " ".join(nums)}]}))
    corpus = os.path.join(os.path.abspath(a.out), "copy.jsonl")
    write_atomic(corpus, "\n".join(lines) + "\n")
    write_atomic(os.path.join(a.out, "probe.toml"),
                 CONFIG.format(count=a.count, model=os.path.abspath(a.model), steps=a.steps, corpus=corpus))
    print(f"wrote {corpus} ({a.count} conversations) and {os.path.join(a.out, 'probe.toml')}")


if __name__ == "__main__":
    main()
