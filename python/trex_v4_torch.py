#!/usr/bin/python3
"""An independent PyTorch implementation of trex's DeepSeek-V4-style model, for cross-checks.

Written from ../shared/spec/deepseek-v4.md (sections 3-12: the formulas there are the contract), not
from the C++ code, so that the two implementations fail independently. Eager autograd in fp32, or
in float64 for checking. Parameter names and shapes are those of the C++ layout
(trex::model::build_param_layout): "embed", "layers.3.attn.wq_a", "layers.3.ffn.experts.5.w1", ...
With the MTP block (depth 1) when the weights file has "mtp.0.*" tensors (selftest/bench: --mtp).

Subcommands (Debian's torch 1.13 is visible to /usr/bin/python3 only):

  debug-state --config C.toml --weights W.safetensors --batch B.safetensors --out D.safetensors
              [--steps 10] [--dtype float64|float32]
      In the manner of llm.c's test_gpt2.c: reads the weights trex's Transformer::save wrote and a
      batch (I32 "ids", "targets" (-1: no loss), "doc_lens"; AdamW hyperparameters and the names
      without weight decay in the metadata), and writes "logits" [T, V], "loss" (mean cross-entropy),
      "ce_sum", "counted", "indexer_loss" (sum over ratio-4 layers of lambda_I L_I), "mtp_sum",
      "mtp_counted", "grads.NAME" for every parameter (the gradient of the objective
      (ce_sum + mtp_loss_weight mtp_sum) / counted + indexer_loss), and "step_losses" / "step_indexer_losses":
      the losses before each of --steps torch.optim.AdamW steps. The routing bias is not updated.
  selftest --config C.toml [--seq N]
      float64 central finite differences of every parameter tensor along a random direction (the
      backbone against the cross-entropy, the indexer against its KL loss), then 8 AdamW steps from
      a fresh initialisation: the loss must fall.
  bench --config C.toml --seq N [--steps 5] [--threads 2]
      training tokens/s of one forward+backward+AdamW step (median after a warm-up step), JSON.

Safetensors is read and written by hand (torch 1.13 has no safetensors package): 8-byte little-endian
header length, JSON header, raw little-endian row-major bytes.
"""
import argparse
import json
import math
import os
import statistics
import struct
import sys
import time
import tomllib

import torch
import torch.nn.functional as F

# ----------------------------------------------------------------------------------------------
# safetensors

_ST_DTYPES = {"F64": torch.float64, "F32": torch.float32, "I32": torch.int32, "I64": torch.int64}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def read_safetensors(path):
    """-> (dict name -> tensor (a copy), metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SystemExit(f"{path}: not a safetensors file (shorter than 8 bytes)")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise SystemExit(f"{path}: tensor '{name}': dtype {info['dtype']} not supported here")
        b, e = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:e]), dtype=dtype) if e > b else torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out, meta


def write_safetensors(path, tensors, metadata=None):
    """Writes atomically (temporary name, then rename)."""
    header = {}
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    chunks, off = [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((8 - len(hj) % 8) % 8)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------
# configuration


class Config:
    """The V4 fields of a trex model TOML (configs/model/*.toml)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            t = tomllib.load(f)
        m, a, ix, h, ff = t["model"], t["attention"], t.get("indexer", {}), t["mhc"], t["ffn"]
        if a.get("kind") != "v4":
            raise SystemExit(f"{path}: attention.kind must be \"v4\"")
        self.V, self.d, self.L = m["vocab"], m["hidden"], m["layers"]
        self.eps = float(m.get("norm_eps", 1e-6))
        self.init_std = float(m.get("init_std", 0.02))
        self.mtp_depth = int(m.get("mtp_depth", 0))
        self.mtp_weight = float(m.get("mtp_loss_weight", 0.1 if self.mtp_depth > 0 else 0.0))
        self.seq = int(m.get("train_seq_len", 512))
        self.H, self.hd, self.rd = a["heads"], a["head_dim"], a["rope_dims"]
        self.qlr, self.win = a["q_lora_rank"], a["window"]
        self.G, self.olr = a["o_groups"], a["o_lora_rank"]
        self.ratios = list(a["compress_ratios"])
        self.rope_theta = float(a.get("rope_theta", 10000))
        self.compress_rope_theta = float(a.get("compress_rope_theta", 10000))
        self.yarn_factor = float(a.get("yarn_factor", 1))
        self.yarn_orig = int(a.get("yarn_original_length", 0))
        self.yarn_beta_fast = float(a.get("yarn_beta_fast", 32))
        self.yarn_beta_slow = float(a.get("yarn_beta_slow", 1))
        self.IH, self.Ihd, self.topk = ix.get("heads", 0), ix.get("head_dim", 0), ix.get("top_k", 0)
        self.lambda_I = float(ix.get("loss_weight", 1.0))
        self.n, self.T_sk, self.hc_eps = h["streams"], h["sinkhorn_iters"], float(h.get("eps", 1e-6))
        self.E, self.K, self.f = ff["routed_experts"], ff["top_k"], ff["expert_hidden"]
        self.shared = ff.get("shared_experts", 1)
        self.n_hash = ff.get("hash_layers", 0)
        self.gamma = float(ff.get("routed_scaling_factor", 1.0))
        self.limit = float(ff.get("swiglu_limit", 0))
        if ff.get("score_function", "sqrtsoftplus") != "sqrtsoftplus":
            raise SystemExit(f"{path}: ffn.score_function must be sqrtsoftplus for V4")


def param_shapes(c, with_mtp=False):
    """[(name, shape, decay)] in the order of spec section 1 (decay: matrices yes; norms, sinks,
    ape, mHC b and scale no). with_mtp: the MTP block (depth 1) too."""
    n, d = c.n, c.d
    out = [("embed", [c.V, d], True)]
    blocks = [(f"layers.{i}.", c.ratios[i]) for i in range(c.L)]
    if with_mtp:
        blocks.append(("mtp.0.", 0))
    for p, r in blocks:
        out += [(p + "hc_attn_fn", [(n + 2) * n, n * d], True), (p + "hc_attn_base", [(n + 2) * n], False),
                (p + "hc_attn_scale", [3], False), (p + "attn_norm", [d], False)]
        a = p + "attn."
        out += [(a + "wq_a", [c.qlr, d], True), (a + "q_norm", [c.qlr], False),
                (a + "wq_b", [c.H * c.hd, c.qlr], True), (a + "wkv", [c.hd, d], True),
                (a + "kv_norm", [c.hd], False), (a + "attn_sink", [c.H], False),
                (a + "wo_a", [c.G * c.olr, c.H * c.hd // c.G], True), (a + "wo_b", [d, c.G * c.olr], True)]
        if r > 0:
            cc = 2 if r == 4 else 1
            out += [(a + "compressor.wkv", [cc * c.hd, d], True), (a + "compressor.wgate", [cc * c.hd, d], True),
                    (a + "compressor.ape", [r, cc * c.hd], False), (a + "compressor.norm", [c.hd], False)]
        if r == 4:
            out += [(a + "indexer.wq_b", [c.IH * c.Ihd, c.qlr], True),
                    (a + "indexer.weights_proj", [c.IH, d], True),
                    (a + "indexer.compressor.wkv", [2 * c.Ihd, d], True),
                    (a + "indexer.compressor.wgate", [2 * c.Ihd, d], True),
                    (a + "indexer.compressor.ape", [4, 2 * c.Ihd], False),
                    (a + "indexer.compressor.norm", [c.Ihd], False)]
        out += [(p + "hc_ffn_fn", [(n + 2) * n, n * d], True), (p + "hc_ffn_base", [(n + 2) * n], False),
                (p + "hc_ffn_scale", [3], False), (p + "ffn_norm", [d], False)]
        fp = p + "ffn."
        out.append((fp + "gate.weight", [c.E, d], True))
        for e in range(c.E):
            out += [(fp + f"experts.{e}.w1", [c.f, d], True), (fp + f"experts.{e}.w2", [d, c.f], True),
                    (fp + f"experts.{e}.w3", [c.f, d], True)]
        if c.shared:
            out += [(fp + "shared_experts.w1", [c.f, d], True), (fp + "shared_experts.w2", [d, c.f], True),
                    (fp + "shared_experts.w3", [c.f, d], True)]
    out += [("hc_head_fn", [n, n * d], True), ("hc_head_base", [n], False), ("hc_head_scale", [1], False),
            ("norm", [d], False), ("head", [c.V, d], True)]
    if with_mtp:
        out += [("mtp.0.e_proj", [d, d], True), ("mtp.0.h_proj", [d, d], True), ("mtp.0.enorm", [d], False),
                ("mtp.0.hnorm", [d], False), ("mtp.0.norm", [d], False), ("mtp.0.hc_head_fn", [n, n * d], True),
                ("mtp.0.hc_head_base", [n], False), ("mtp.0.hc_head_scale", [1], False)]
    return out


def is_indexer_param(name):
    return ".attn.indexer." in name


def init_state(c, seed, dtype=torch.float64, with_mtp=False):
    """A fresh model (spec section 11 initialisation) for standalone runs: params, bias, tid2eid."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape, _ in param_shapes(c, with_mtp):
        last = name.rsplit(".", 1)[-1]
        if last in ("attn_sink", "ape") or name.endswith("_base"):
            t = torch.zeros(shape, dtype=dtype)
        elif name.endswith("_scale") or "norm" in last:
            t = torch.ones(shape, dtype=dtype)
        else:
            t = torch.randn(shape, generator=g, dtype=dtype) * c.init_std
        params[name] = t
    bias, tid2eid = {}, {}
    for i in range(c.L):
        if i < c.n_hash:
            tid2eid[i] = torch.stack([torch.randperm(c.E, generator=g)[:c.K] for _ in range(c.V)])
        else:
            bias[i] = torch.zeros(c.E, dtype=dtype)
    if with_mtp:
        bias["mtp"] = torch.zeros(c.E, dtype=dtype)
    return params, bias, tid2eid


def load_weights(c, path, dtype):
    """Reads a file trex's Transformer::save wrote; checks every parameter name and shape."""
    t, _ = read_safetensors(path)
    params, bias, tid2eid = {}, {}, {}
    with_mtp = "mtp.0.e_proj" in t
    for name, shape, _ in param_shapes(c, with_mtp):
        if name not in t:
            raise SystemExit(f"{path}: no tensor '{name}'")
        if list(t[name].shape) != shape:
            raise SystemExit(f"{path}: tensor '{name}' has shape {list(t[name].shape)}, expected {shape}")
        params[name] = t.pop(name).to(dtype)
    for i in range(c.L):
        key = f"layers.{i}.ffn.gate."
        if i < c.n_hash:
            if key + "tid2eid" not in t:
                raise SystemExit(f"{path}: no tensor '{key}tid2eid' (hash layer {i})")
            tid2eid[i] = t.pop(key + "tid2eid").long()
            t.pop(key + "bias", None)
        else:
            if key + "bias" not in t:
                raise SystemExit(f"{path}: no tensor '{key}bias' (score-routed layer {i})")
            bias[i] = t.pop(key + "bias").to(dtype)
    if with_mtp:
        if "mtp.0.ffn.gate.bias" not in t:
            raise SystemExit(f"{path}: no tensor 'mtp.0.ffn.gate.bias'")
        bias["mtp"] = t.pop("mtp.0.ffn.gate.bias").to(dtype)
    extra = sorted(t)
    if extra:
        raise SystemExit(f"{path}: tensors this model does not have: {', '.join(extra[:5])}")
    return params, bias, tid2eid


# ----------------------------------------------------------------------------------------------
# the model (spec sections 3-10)


def rms_norm(x, eps, w=None):
    """Spec section 5: y = w * x * (mean(x^2) + eps)^(-1/2) over the last dim; w None = weight-free."""
    y = x * inv_rms(x, eps)
    return y if w is None else y * w


def inv_rms(x, eps):
    """(mean(x^2) + eps)^(-1/2) over the last dim, keepdim (a norm, so no x^2 temporary)."""
    ms = torch.linalg.vector_norm(x, dim=-1, keepdim=True).square() / x.shape[-1]
    return torch.rsqrt(ms + eps)


def rope_freqs(c, ratio, dtype):
    """w_p per pair of the layer's table (spec section 6), float64 then cast."""
    rd = c.rd
    base = c.rope_theta if ratio == 0 else c.compress_rope_theta
    p = torch.arange(rd // 2, dtype=torch.float64)
    w = base ** (-2.0 * p / rd)
    if ratio > 0 and c.yarn_factor > 1:
        def dcorr(r):
            return rd * math.log(c.yarn_orig / (2 * math.pi * r)) / (2 * math.log(base))
        lo = max(math.floor(dcorr(c.yarn_beta_fast)), 0)
        hi = min(math.ceil(dcorr(c.yarn_beta_slow)), rd - 1)
        if lo == hi:
            hi += 0.001
        ramp = ((p - lo) / (hi - lo)).clamp(0, 1)
        w = w / c.yarn_factor * ramp + w * (1 - ramp)
    return w


def rope(x, pos, freqs, inverse=False):
    """Rotates interleaved pairs of the last rd = 2 len(freqs) dims of x [..., D] (leading dim =
    positions pos [N]; x is [N, D] or [N, heads, D]). Inverse: angle -th."""
    ang = pos.to(torch.float64)[:, None] * freqs[None, :]
    cos, sin = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    if inverse:
        sin = -sin
    if x.dim() == 3:
        cos, sin = cos[:, None, :], sin[:, None, :]
    rd = 2 * freqs.numel()
    keep, rot = x[..., :x.shape[-1] - rd], x[..., x.shape[-1] - rd:]
    v0, v1 = rot[..., 0::2], rot[..., 1::2]
    y = torch.stack((v0 * cos - v1 * sin, v0 * sin + v1 * cos), dim=-1).flatten(-2)
    return torch.cat((keep, y), dim=-1)


def hc_pre(c, X, fn, base, scale):
    """mHC pre-projection (spec section 4). X [T, n, d] -> y [T, d], post [T, n], C [T, n, n]."""
    n = c.n
    T = X.shape[0]
    xv = X.reshape(T, -1)
    m = inv_rms(xv, c.eps) * (xv @ fn.t())
    pre = torch.sigmoid(m[:, :n] * scale[0] + base[:n]) + c.hc_eps
    post = 2 * torch.sigmoid(m[:, n:2 * n] * scale[1] + base[n:2 * n])
    # Sinkhorn on [j (row), k (column), t]: tokens last, so both sums reduce over an outer dim
    # (torch 1.13 reduces a contiguous inner dim of 4 several times slower)
    Z = (m[:, 2 * n:] * scale[2] + base[2 * n:]).t().reshape(n, n, T)
    C = torch.softmax(Z, dim=1) + c.hc_eps
    C = C / (C.sum(0, keepdim=True) + c.hc_eps)
    for _ in range(c.T_sk - 1):
        C = C / (C.sum(1, keepdim=True) + c.hc_eps)
        C = C / (C.sum(0, keepdim=True) + c.hc_eps)
    y = (pre[:, :, None] * X).sum(1)
    return y, post, C.permute(2, 0, 1)


def hc_post(Fo, X, post, C):
    """X'_k = post_k F + sum_j C_jk X_j (broadcast products: torch 1.13's bmm loops over the
    batch in Python-visible selects for tiny matrices)."""
    out = post[:, :, None] * Fo[:, None, :]
    for j in range(X.shape[1]):
        out = out + C[:, j, :, None] * X[:, j, None, :]
    return out


def hc_head(c, X, fn, base, scale):
    T = X.shape[0]
    xv = X.reshape(T, -1)
    w = torch.sigmoid(inv_rms(xv, c.eps) * (xv @ fn.t()) * scale[0] + base) + c.hc_eps
    return (w[:, :, None] * X).sum(1)


def compress(c, x_doc, wkv, wgate, ape, norm, ratio, head_dim, freqs):
    """Compressor of one document (spec section 7): x_doc [Ld, d] -> entries [Ld // ratio, head_dim],
    normalised and rotated to pos i * ratio."""
    Ld = x_doc.shape[0]
    nE = Ld // ratio
    if nE == 0:
        return x_doc.new_zeros(0, head_dim)
    Kt = (x_doc[:nE * ratio] @ wkv.t()).view(nE, ratio, -1)
    Zt = (x_doc[:nE * ratio] @ wgate.t()).view(nE, ratio, -1) + ape[None]
    if ratio == 4:  # overlapping: block i-1 with channels [0, hd), block i with [hd, 2hd)
        hd = head_dim
        prevK = torch.cat((Kt.new_zeros(1, ratio, hd), Kt[:-1, :, :hd]), 0)
        prevZ = torch.cat((Zt.new_full((1, ratio, hd), float("-inf")), Zt[:-1, :, :hd]), 0)
        Kt = torch.cat((prevK, Kt[:, :, hd:]), 1)
        Zt = torch.cat((prevZ, Zt[:, :, hd:]), 1)
    S = torch.softmax(Zt, dim=1)
    K = (S * Kt).sum(1)
    K = rms_norm(K, c.eps, norm)
    pos = torch.arange(nE) * ratio
    return rope(K, pos, freqs)


def window_scores(q, kv, win, tau):
    """Sliding-window scores by blocks of `win` queries, each against its own and the previous key
    block. q [Ld, H, hd], kv [Ld, hd] -> (scores [Ld, H, 2 win] (-inf where invisible), key blocks
    [nb, 2 win, hd])."""
    Ld, H, hd = q.shape
    B = win
    nb = (Ld + B - 1) // B
    Lp = nb * B
    kv_pad = torch.cat((kv.new_zeros(B, hd), kv, kv.new_zeros(Lp - Ld, hd)), 0)  # [Lp + B, hd]
    kb = kv_pad.unfold(0, 2 * B, B).transpose(1, 2)  # [nb, 2B, hd]; slot s of block b = key b B - B + s
    qb = torch.cat((q, q.new_zeros(Lp - Ld, H, hd)), 0).view(nb, B, H, hd)
    s = torch.einsum("bihd,bsd->bihs", qb, kb) * tau
    i = torch.arange(B)[:, None]
    sl = torch.arange(2 * B)[None, :]
    j = torch.arange(nb)[:, None, None] * B - B + sl[None]  # key position [nb, 1, 2B]
    t = torch.arange(nb)[:, None, None] * B + i[None]       # query position [nb, B, 1]
    ok = (j <= t) & (j >= t - win + 1) & (j >= 0)
    s = s.masked_fill(~ok[:, :, None, :], float("-inf"))
    return s.reshape(Lp, H, 2 * B)[:Ld], kb


def attention(c, prefix, ratio, P, x, docs, pos, freqs):
    """One attention layer (spec sections 7-8) of the block under `prefix` ("layers.3." or "mtp.0.").
    x [T, d] after attn_norm -> (out [T, d], lambda_I L_I)."""
    a = prefix + "attn."
    H, hd = c.H, c.hd
    T = x.shape[0]
    qr = rms_norm(x @ P[a + "wq_a"].t(), c.eps, P[a + "q_norm"])
    q = rms_norm((qr @ P[a + "wq_b"].t()).view(T, H, hd), c.eps)
    q = rope(q, pos, freqs)
    kv = rope(rms_norm(x @ P[a + "wkv"].t(), c.eps, P[a + "kv_norm"]), pos, freqs)
    tau = hd ** -0.5
    sink = P[a + "attn_sink"]
    if ratio == 4:  # the indexer sees detached inputs
        xd, qrd = x.detach(), qr.detach()
        qI = rope((qrd @ P[a + "indexer.wq_b"].t()).view(T, c.IH, c.Ihd), pos, freqs)
        wI = (xd @ P[a + "indexer.weights_proj"].t()) * (c.Ihd ** -0.5) * (c.IH ** -0.5)
    outs = []
    kl_sum, n_rows = x.new_zeros(()), 0
    for b, Ld in docs:
        sl = slice(b, b + Ld)
        qd, kvd = q[sl], kv[sl]
        s_win, kb = window_scores(qd, kvd, c.win, tau)
        parts = [s_win]
        t_idx = torch.arange(Ld)
        if ratio > 0:
            Kc = compress(c, x[sl], P[a + "compressor.wkv"], P[a + "compressor.wgate"],
                          P[a + "compressor.ape"], P[a + "compressor.norm"], ratio, hd, freqs)
            nE = Kc.shape[0]
            vis = torch.arange(nE)[None, :] < ((t_idx + 1) // ratio)[:, None]  # [Ld, nE]
            if ratio == 4 and nE > 0:
                kI = compress(c, xd[sl], P[a + "indexer.compressor.wkv"], P[a + "indexer.compressor.wgate"],
                              P[a + "indexer.compressor.ape"], P[a + "indexer.compressor.norm"], 4, c.Ihd, freqs)
                u = torch.einsum("thd,id->thi", qI[sl], kI)
                I = (wI[sl][:, :, None] * torch.relu(u)).sum(1)  # [Ld, nE]
                I_m = I.masked_fill(~vis, float("-inf"))
                kk = min(c.topk, nE)
                order = torch.sort(I_m.detach(), dim=-1, descending=True, stable=True).indices[:, :kk]
                nsel = torch.clamp((t_idx + 1) // ratio, max=kk)
                slot_ok = torch.arange(kk)[None, :] < nsel[:, None]
                sel = torch.zeros(Ld, nE, dtype=torch.bool)
                sel.scatter_(1, order, slot_ok)
                vis = sel
            s_c = torch.einsum("thd,id->thi", qd, Kc) * tau
            s_c = s_c.masked_fill(~vis[:, None, :], float("-inf"))
            parts.append(s_c)
        parts.append(sink[None, :, None].expand(Ld, H, 1))
        s_all = torch.cat(parts, -1)
        p_all = torch.softmax(s_all, -1)
        W2 = 2 * c.win
        nb = kb.shape[0]
        p_win = p_all[..., :W2]
        p_win = torch.cat((p_win, p_win.new_zeros(nb * c.win - Ld, H, W2)), 0).view(nb, c.win, H, W2)
        o = torch.einsum("bihs,bsd->bihd", p_win, kb).reshape(nb * c.win, H, hd)[:Ld]
        if ratio > 0 and Kc.shape[0] > 0:
            p_c = p_all[..., W2:W2 + Kc.shape[0]]
            o = o + torch.einsum("thi,id->thd", p_c, Kc)
            if ratio == 4:
                # teacher: the main attention's mass on each selected entry, summed over heads
                rows = vis.any(-1)  # rows with v_t = 0 are excluded
                n_rows += int(rows.sum())
                visr = vis[rows]
                teach = p_c.detach()[rows].sum(1).masked_fill(~visr, 0)
                teach = teach / teach.sum(-1, keepdim=True)
                logq = torch.log_softmax(I[rows].masked_fill(~visr, float("-inf")), -1).masked_fill(~visr, 0)
                keep = visr & (teach > 0)  # 0 ln 0 = 0
                logp = torch.log(torch.where(keep, teach, torch.ones_like(teach)))
                kl_sum = kl_sum + torch.where(keep, teach * (logp - logq), torch.zeros_like(teach)).sum()
        outs.append(rope(o, pos[sl], freqs, inverse=True))
    o = torch.cat(outs, 0).reshape(T, c.G, H * hd // c.G)
    wo_a = P[a + "wo_a"].view(c.G, c.olr, H * hd // c.G)
    u = torch.einsum("tgi,goi->tgo", o, wo_a).reshape(T, c.G * c.olr)
    out = u @ P[a + "wo_b"].t()
    L_I = c.lambda_I * kl_sum / n_rows if n_rows > 0 else x.new_zeros(())
    return out, L_I


def expert(c, x, w1, w2, w3, weight=None):
    """Limited SwiGLU (spec section 10); weight [N] is applied before W2."""
    g, u = x @ w1.t(), x @ w3.t()
    if c.limit > 0:
        g, u = g.clamp(max=c.limit), u.clamp(-c.limit, c.limit)
    h = F.silu(g) * u
    if weight is not None:
        h = h * weight[:, None]
    return h @ w2.t()


def moe(c, prefix, P, x, ids, bias, tid2eid):
    """MoE (spec section 9) of the block under `prefix`: hash-routed by the table tid2eid [V, K]
    when given, else by the top-K of scores + bias -> (out [T, d], tokens per expert [E])."""
    fp = prefix + "ffn."
    s = torch.sqrt(F.softplus(x @ P[fp + "gate.weight"].t()))
    if tid2eid is not None:
        idx = tid2eid[ids]
    else:
        idx = torch.topk((s + bias).detach(), c.K, dim=-1).indices
    sw = s.gather(1, idx)
    w = c.gamma * sw / sw.sum(-1, keepdim=True)
    out = torch.zeros_like(x)
    load = torch.bincount(idx.flatten(), minlength=c.E)
    for e in range(c.E):
        tok, slot = torch.nonzero(idx == e, as_tuple=True)
        if tok.numel() == 0:
            continue
        h = expert(c, x[tok], P[fp + f"experts.{e}.w1"], P[fp + f"experts.{e}.w2"], P[fp + f"experts.{e}.w3"],
                   w[tok, slot])
        out.index_add_(0, tok, h)
    if c.shared:
        out = out + expert(c, x, P[fp + "shared_experts.w1"], P[fp + "shared_experts.w2"],
                           P[fp + "shared_experts.w3"])
    return out, load


def doc_positions(T, doc_lens):
    docs, b = [], 0
    for n in doc_lens:
        docs.append((b, int(n)))
        b += int(n)
    if b != T:
        raise SystemExit(f"doc_lens sum to {b}, not the {T} tokens of the batch")
    pos = torch.cat([torch.arange(n) for _, n in docs])
    return docs, pos


def block(c, prefix, ratio, P, X, ids, docs, pos, freqs, bias, tid2eid):
    """One block (spec section 3): mHC around attention, mHC around MoE -> (X', lambda_I L_I)."""
    y, post, C = hc_pre(c, X, P[prefix + "hc_attn_fn"], P[prefix + "hc_attn_base"], P[prefix + "hc_attn_scale"])
    Fo, L_I = attention(c, prefix, ratio, P, rms_norm(y, c.eps, P[prefix + "attn_norm"]), docs, pos, freqs)
    X = hc_post(Fo, X, post, C)
    y, post, C = hc_pre(c, X, P[prefix + "hc_ffn_fn"], P[prefix + "hc_ffn_base"], P[prefix + "hc_ffn_scale"])
    Fo, _ = moe(c, prefix, P, rms_norm(y, c.eps, P[prefix + "ffn_norm"]), ids, bias, tid2eid)
    return hc_post(Fo, X, post, C), L_I


def lm_head(c, prefix, P, X, targets):
    """mHC head, final norm, shared LM head, cross-entropy -> (logits, ce_sum, counted)."""
    y = hc_head(c, X, P[prefix + "hc_head_fn"], P[prefix + "hc_head_base"], P[prefix + "hc_head_scale"])
    logits = rms_norm(y, c.eps, P[prefix + "norm"]) @ P["head"].t()
    mask = targets >= 0
    counted = int(mask.sum())
    ce_sum = F.cross_entropy(logits[mask], targets[mask].long(), reduction="sum") if counted else logits.sum() * 0
    return logits, ce_sum, counted


def forward(c, P, bias, tid2eid, ids, targets, doc_lens):
    """-> dict(logits, ce_sum, counted, loss (mean CE), indexer_loss, mtp_sum, mtp_counted,
    objective): objective = (ce_sum + mtp_loss_weight mtp_sum) / counted + indexer_loss, the
    quantity whose gradient trex's Transformer::forward_backward adds (grad_scale = 1 / counted)."""
    T = ids.shape[0]
    docs, pos = doc_positions(T, doc_lens)
    X = P["embed"][ids][:, None, :].expand(T, c.n, c.d)
    L_I = X.new_zeros(())
    freqs = {r: rope_freqs(c, r, X.dtype) for r in set(c.ratios) | {0}}
    for li in range(c.L):
        X, li_loss = block(c, f"layers.{li}.", c.ratios[li], P, X, ids, docs, pos, freqs[c.ratios[li]],
                           bias.get(li), tid2eid.get(li))
        L_I = L_I + li_loss
    logits, ce_sum, counted = lm_head(c, "", P, X, targets)
    out = {"logits": logits, "ce_sum": ce_sum, "counted": counted, "loss": ce_sum / max(counted, 1),
           "indexer_loss": L_I, "mtp_sum": X.new_zeros(()), "mtp_counted": 0}
    if "mtp.0.e_proj" in P:
        # MTP (spec section 3): position t predicts token t + 2 from the final streams at t and the
        # embedding of id t + 1, inside one document (a document's last position predicts nothing).
        nxt = torch.arange(T) + 1
        inside = torch.zeros(T, dtype=torch.bool)
        for b, n in docs:
            inside[b:b + n - 1] = True
        nxt = torch.where(inside, nxt, torch.zeros_like(nxt))
        mtp_ids = torch.where(inside, ids[nxt], torch.zeros_like(ids))
        mtp_targets = torch.where(inside, targets[nxt], torch.full_like(targets, -1))
        e = rms_norm(P["embed"][mtp_ids], c.eps, P["mtp.0.enorm"])
        X0 = rms_norm(X, c.eps, P["mtp.0.hnorm"]) @ P["mtp.0.h_proj"].t() + (e @ P["mtp.0.e_proj"].t())[:, None, :]
        Xm, li_loss = block(c, "mtp.0.", 0, P, X0, mtp_ids, docs, pos, freqs[0], bias.get("mtp"), None)
        out["indexer_loss"] = out["indexer_loss"] + li_loss
        _, out["mtp_sum"], out["mtp_counted"] = lm_head(c, "mtp.0.", P, Xm, mtp_targets)
    out["ce_objective"] = (ce_sum + c.mtp_weight * out["mtp_sum"]) / max(counted, 1)
    out["objective"] = out["ce_objective"] + out["indexer_loss"]
    return out


# ----------------------------------------------------------------------------------------------
# subcommands


def leaf_params(params):
    return {k: v.clone().requires_grad_(True) for k, v in params.items()}


def make_optimizer(P, hyper, no_decay):
    decay = [v for k, v in P.items() if k not in no_decay]
    nodecay = [v for k, v in P.items() if k in no_decay]
    groups = [{"params": decay, "weight_decay": hyper["weight_decay"]}]
    if nodecay:
        groups.append({"params": nodecay, "weight_decay": 0.0})
    return torch.optim.AdamW(groups, lr=hyper["lr"], betas=(hyper["beta1"], hyper["beta2"]), eps=hyper["eps"])


def cmd_debug_state(args):
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    c = Config(args.config)
    params, bias, tid2eid = load_weights(c, args.weights, dtype)
    with_mtp = "mtp.0.e_proj" in params
    b, meta = read_safetensors(args.batch)
    ids, targets, doc_lens = b["ids"].long(), b["targets"].long(), b["doc_lens"].tolist()
    if ids.numel() and (ids.min() < 0 or ids.max() >= c.V):
        raise SystemExit(f"{args.batch}: ids outside [0, {c.V})")
    hyper = {k: float(meta.get(k, dflt)) for k, dflt in
             (("lr", 1e-3), ("beta1", 0.9), ("beta2", 0.999), ("eps", 1e-8), ("weight_decay", 0.01))}
    if "no_decay" in meta:
        no_decay = set(x for x in meta["no_decay"].split(",") if x)
    else:
        no_decay = {name for name, _, dec in param_shapes(c, with_mtp) if not dec}
    P = leaf_params(params)
    out = forward(c, P, bias, tid2eid, ids, targets, doc_lens)
    out["objective"].backward()
    res = {"logits": out["logits"].detach().float(),
           "loss": torch.tensor([float(out["loss"])]), "ce_sum": torch.tensor([float(out["ce_sum"])]),
           "counted": torch.tensor([float(out["counted"])]),
           "indexer_loss": torch.tensor([float(out["indexer_loss"])]),
           "mtp_sum": torch.tensor([float(out["mtp_sum"])]), "mtp_counted": torch.tensor([float(out["mtp_counted"])])}
    for name, _, _ in param_shapes(c, with_mtp):
        g = P[name].grad
        res["grads." + name] = (g if g is not None else torch.zeros_like(P[name])).detach().float()
    losses, idx_losses = [], []
    if args.steps > 0:
        P = leaf_params(params)
        opt = make_optimizer(P, hyper, no_decay)
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            o = forward(c, P, bias, tid2eid, ids, targets, doc_lens)
            o["objective"].backward()
            losses.append(float(o["loss"]))
            idx_losses.append(float(o["indexer_loss"]))
            opt.step()
        res["step_losses"] = torch.tensor(losses, dtype=torch.float32)
        res["step_indexer_losses"] = torch.tensor(idx_losses, dtype=torch.float32)
    write_safetensors(args.out, res, {"format": "trex.torch_debug_state", "dtype": args.dtype,
                                      "steps": args.steps})
    print(f"loss {float(out['loss']):.6f} indexer_loss {float(out['indexer_loss']):.6f}"
          + (f" after {args.steps} AdamW steps {losses[-1]:.6f}" if losses else ""))


def random_batch(c, seq, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, c.V, (seq,), generator=g)
    targets = torch.cat((ids[1:], torch.tensor([-1])))
    first = seq * 5 // 8
    targets[first - 1] = -1
    return ids, targets, [first, seq - first]


def cmd_selftest(args):
    c = Config(args.config)
    if args.steps_config:
        for kv in args.steps_config:
            k, v = kv.split("=")
            setattr(c, k, type(getattr(c, k))(v))
    if args.mtp and c.mtp_weight == 0:
        c.mtp_weight = 0.3
    params, bias, tid2eid = init_state(c, 1, torch.float64, args.mtp)
    # give norms, sinks and mHC parameters non-trivial values so their gradients are exercised
    g = torch.Generator().manual_seed(7)
    for k in params:
        if params[k].dim() == 1 or k.endswith(".ape"):
            params[k] = params[k] + 0.1 * torch.randn(params[k].shape, generator=g, dtype=torch.float64)
    ids, targets, docs = random_batch(c, args.seq, 3)
    P = leaf_params(params)
    out = forward(c, P, bias, tid2eid, ids, targets, docs)
    out["objective"].backward()
    print(f"loss {float(out['loss']):.6f} indexer_loss {float(out['indexer_loss']):.6f}")
    worst, bad = 0.0, 0
    h = 1e-6
    for name, shape, _ in param_shapes(c, args.mtp):
        v = torch.randn(shape, generator=g, dtype=torch.float64)
        grad = P[name].grad
        ana = float((grad * v).sum()) if grad is not None else 0.0
        key = "indexer_loss" if is_indexer_param(name) else "ce_objective"

        def fd(step):
            vals = []
            for sign in (1, -1):
                Q = dict(params)
                Q[name] = params[name] + sign * step * v
                with torch.no_grad():
                    vals.append(float(forward(c, Q, bias, tid2eid, ids, targets, docs)[key]))
            return (vals[0] - vals[1]) / (2 * step)
        # The difference quotient carries about 1e-16 |loss| / h of rounding noise. A routing or
        # top-k choice that flips inside [-h, h] puts a jump into it: then smaller steps decide.
        for step in (h, h / 10, h / 100):
            num = fd(step)
            err = abs(num - ana) / max(abs(num), abs(ana), 1e-10)
            ok_one = abs(num - ana) <= 1e-5 * max(abs(num), abs(ana)) + 2e-9 * (h / step)
            if ok_one:
                break
        bad += not ok_one
        worst = max(worst, err if max(abs(num), abs(ana)) > 1e-4 else 0.0)
        flag = "" if ok_one else "   <-- MISMATCH"
        print(f"{name:45s} fd {num: .9e} autograd {ana: .9e} rel {err:.1e}{flag}")
    print(f"worst relative error (derivatives > 1e-4) {worst:.2e}; mismatches {bad}")
    # Packing and causality: a token changed in the second document leaves the first document's
    # logits unchanged, and a token changed at t leaves every earlier logit unchanged ("unchanged"
    # up to 1e-12: rows routed to an expert change with the token, and a GEMM of another height
    # may round the other rows differently).
    with torch.no_grad():
        base_logits = forward(c, params, bias, tid2eid, ids, targets, docs)["logits"]
        for t in (docs[0] + 10, docs[0] // 2):
            ids2 = ids.clone()
            ids2[t] = (ids2[t] + 1) % c.V
            l2 = forward(c, params, bias, tid2eid, ids2, targets, docs)["logits"]
            lo = docs[0] if t >= docs[0] else 0
            def differ(a, b):
                return float((a - b).abs().max()) if a.numel() else 0.0
            same = differ(l2[:t], base_logits[:t]) < 1e-12
            changed = differ(l2[t:], base_logits[t:]) > 1e-6
            leak = differ(l2[docs[0]:], base_logits[docs[0]:]) >= 1e-12 if t < docs[0] else False
            print(f"token {t} changed: logits before it unchanged {same}, after it changed {changed}"
                  + (f", second document unchanged {not leak}" if t < docs[0] else f" (document starts at {lo})"))
            bad += (not same) + (not changed) + leak
    P = leaf_params({k: v.float() for k, v in init_state(c, 2, torch.float32, args.mtp)[0].items()})
    opt = make_optimizer(P, {"lr": 3e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1},
                         {n for n, _, d in param_shapes(c, args.mtp) if not d})
    losses = []
    for _ in range(8):
        opt.zero_grad()
        o = forward(c, P, {k: v.float() for k, v in bias.items()}, tid2eid, ids, targets, docs)
        o["objective"].backward()
        losses.append(float(o["loss"]))
        opt.step()
    print("AdamW losses", " ".join(f"{x:.4f}" for x in losses))
    ok = bad == 0 and losses[-1] < losses[0] - 0.1
    print("selftest", "passed" if ok else "FAILED")
    return 0 if ok else 1


def cmd_bench(args):
    torch.set_num_threads(args.threads)
    c = Config(args.config)
    if not args.mtp:
        c.mtp_weight = 0.0
    params, bias, tid2eid = init_state(c, 1, torch.float32, args.mtp)
    P = leaf_params(params)
    bias = {k: v.float() for k, v in bias.items()}
    opt = make_optimizer(P, {"lr": 1e-4, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1},
                         {n for n, _, d in param_shapes(c, args.mtp) if not d})
    ids, targets, docs = random_batch(c, args.seq, 3)
    docs = [args.seq]
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        o = forward(c, P, bias, tid2eid, ids, targets, docs)
        o["objective"].backward()
        opt.step()
        dt = time.perf_counter() - t0
        losses.append(float(o["loss"]))
        if step >= args.warmup:
            times.append(dt)
    med = statistics.median(times)
    res = {"config": args.config, "seq": args.seq, "threads": args.threads, "torch": torch.__version__, "mtp": args.mtp,
           "step_times_s": times,
           "median_step_s": med, "tokens_per_s": args.seq / med, "losses": losses}
    print(json.dumps(res))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("debug-state")
    d.add_argument("--config", required=True)
    d.add_argument("--weights", required=True)
    d.add_argument("--batch", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--steps", type=int, default=10)
    d.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    d.add_argument("--threads", type=int, default=1)
    s = sub.add_parser("selftest")
    s.add_argument("--config", required=True)
    s.add_argument("--seq", type=int, default=300)
    s.add_argument("--set", dest="steps_config", action="append", help="override a Config field: name=value")
    s.add_argument("--mtp", action="store_true", help="with the MTP block (loss weight 0.3 if the config has none)")
    b = sub.add_parser("bench")
    b.add_argument("--config", required=True)
    b.add_argument("--seq", type=int, default=2048)
    b.add_argument("--steps", type=int, default=3)
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--mtp", action="store_true", help="with the MTP block (off by default)")
    args = ap.parse_args(argv)
    if args.cmd == "debug-state":
        torch.set_num_threads(args.threads)
        return cmd_debug_state(args) or 0
    if args.cmd == "selftest":
        return cmd_selftest(args)
    return cmd_bench(args)


if __name__ == "__main__":
    sys.exit(main())
