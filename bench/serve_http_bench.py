#!/usr/bin/env python3
# serve_http_bench: trex serve measured through HTTP, as clients see it: time to the first
# streamed content token and completion tokens/s (from each stream's usage chunk), for one client
# and for eight at once. Short chat prompt, 64 new tokens (or --tokens N), greedy. Also the CPU
# time per completion token of this client (its threads read every chunk, on the same cores as
# the server) and, with --server-pid PID, of the server process (/proc/PID/stat).
# build/serve_bench measures the engine without HTTP; this adds the server, JSON and SSE.
#
# Two clients, both measured in every run (--client urllib or raw for one alone):
# - urllib (the one of sessions 12-17): urllib.request, each SSE line read through http.client's
#   chunked decoding and parsed with json.loads: ~30 us of Python per token at eight streams
#   (session 18, loaded), on the two cores the server decodes on, so it takes CPU from the
#   server's eight-stream figure and hardly from its one-stream figure (one stream leaves a core
#   free);
# - raw: one thread for all the requests of a round, their sockets (HTTP/1.1, Connection: close)
#   behind one selector; the received bytes are searched for the first non-empty content delta
#   (time to first token), and each body is de-chunked and its usage chunk parsed once at its
#   end: the same figures for a fraction of the client CPU.
# The raw client is cheaper, so the server's eight-stream figure is higher with it; both are
# printed side by side so that neither is reported without the other.
#
# Rounds interleave the clients and the client counts (round r: urllib 1, urllib 8, raw 1,
# raw 8), so each ratio compares runs seconds apart under the same load; a ratio is the median
# of the rounds' 8-client over 1-client rates. The last lines put issue 16's two goals side by
# side for each client (8 clients >= 3x one's tokens/s; first token < 100 ms).
#
#   build/trex serve --ckpt CKPT --port 18766 &
#   python3 bench/serve_http_bench.py http://127.0.0.1:18766 ROUNDS [MODEL] [--tokens N] [--server-pid PID] [--client urllib|raw]
import json, os, re, resource, selectors, socket, statistics, sys, threading, time, urllib.parse, urllib.request
args = sys.argv[1:]
def option(name, default, kind=int):
    if name not in args: return default
    k = args.index(name); v = kind(args[k + 1]); del args[k:k + 2]; return v
tokens = option("--tokens", 64); server_pid = option("--server-pid", 0)
clients = {"urllib": ("urllib",), "raw": ("raw",), "both": ("urllib", "raw")}[option("--client", "both", str)]
def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF); own = ru.ru_utime + ru.ru_stime
    if not server_pid: return own, 0.0
    f = open(f"/proc/{server_pid}/stat").read().rsplit(")", 1)[1].split()
    return own, (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
url = args[0]; rounds = int(args[1]); model = args[2] if len(args) > 2 else "v4-nano"
for _ in range(300):
    try:
        urllib.request.urlopen(url + "/health"); break
    except Exception:
        time.sleep(0.1)
body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Maximize profit for two products."}],
                   "max_tokens": tokens, "temperature": 0, "stream": True,
                   "stream_options": {"include_usage": True}}).encode()

def one_urllib(out):
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter(); first = None; n = 0
    with urllib.request.urlopen(req) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]": continue
            ch = json.loads(line[6:])
            if ch.get("usage"): n = ch["usage"]["completion_tokens"]
            if ch.get("choices") and ch["choices"][0].get("delta", {}).get("content"):
                if first is None: first = time.perf_counter() - t0
    out.append((first, n, time.perf_counter() - t0))

u = urllib.parse.urlsplit(url)
raw_request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
first_content = re.compile(rb'"content":"[^"]')  # a content delta that is not empty (the role chunk's is)

def dechunk(b):
    out = bytearray(); i = 0
    while True:
        j = b.index(b"\r\n", i); size = int(b[i:j].split(b";")[0], 16)
        if size == 0: return bytes(out)
        out += b[j + 2:j + 2 + size]; i = j + 2 + size + 2

def finish_raw(buf, t0, first, end):
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"): raise RuntimeError(head.split(b"\r\n")[0].decode())
    events = [l[6:] for l in dechunk(rest).split(b"\n") if l.startswith(b"data: ")]
    if not events or events[-1] != b"[DONE]": raise RuntimeError("stream without data: [DONE]")
    return first, json.loads(events[-2])["usage"]["completion_tokens"], end - t0

def run_raw(k):
    # One thread for the k requests: their sockets behind one selector, each read as it is ready.
    # Each request's times count from its own connect, as a urllib thread's do.
    sel = selectors.DefaultSelector(); state = {}
    for i in range(k):
        t0 = time.perf_counter(); s = socket.create_connection((u.hostname, u.port or 80))
        s.sendall(raw_request); s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i); state[i] = [bytearray(), None, 0, t0]
    res = []
    while state:
        for key, _ in sel.select():
            s, i = key.fileobj, key.data; st = state[i]; d = s.recv(65536)
            if d:
                st[0] += d
                if st[1] is None and first_content.search(st[0], max(0, st[2] - 16)): st[1] = time.perf_counter() - st[3]
                st[2] = len(st[0])
                continue
            end = time.perf_counter(); sel.unregister(s); s.close(); del state[i]
            res.append(finish_raw(st[0], st[3], st[1], end))
    return res

def run_urllib(k):
    res = []; th = [threading.Thread(target=one_urllib, args=(res,)) for _ in range(k)]
    [t.start() for t in th]; [t.join() for t in th]
    return res

run = {"urllib": run_urllib, "raw": run_raw}
rates, ttfts, cpu, total = {}, {}, {}, {}
for _ in range(rounds):
    for c in clients:
        for k in (1, 8):
            key = (c, k); c0 = cpu_seconds()
            t0 = time.perf_counter(); res = run[c](k); wall = time.perf_counter() - t0; c1 = cpu_seconds()
            if len(res) != k: sys.exit(f"serve_http_bench: {k - len(res)} of {k} {c} requests failed")
            rates.setdefault(key, []).append(sum(r[1] for r in res) / wall)
            ttfts.setdefault(key, []).extend(r[0] * 1e3 for r in res if r[0] is not None)
            n = sum(r[1] for r in res); total[key] = total.get(key, 0) + n
            cpu[key] = [a + b for a, b in zip(cpu.get(key, [0.0, 0.0]), (c1[0] - c0[0], c1[1] - c0[1]))]
for c in clients:
    for k in (1, 8):
        key = (c, k); t = total[key]
        cpu_line = f"client {1e6 * cpu[key][0] / t:.0f} us" + (f", server {1e6 * cpu[key][1] / t:.0f} us" if server_pid else "")
        print(f"{c} client, {k} client(s): first token median {statistics.median(ttfts[key]):.1f} ms (max {max(ttfts[key]):.1f}), "
              f"completion tokens/s (usage) median {statistics.median(rates[key]):.0f} over {rounds} rounds; CPU per token {cpu_line}")
# Issue 16's goals side by side: eight clients' completion tokens/s at least 3x one client's
# (the median of the rounds' ratios), and the first streamed token under 100 ms (the larger of
# the two medians).
for c in clients:
    ratios = [b / a for a, b in zip(rates[(c, 1)], rates[(c, 8)])]
    ratio = statistics.median(ratios); worst = max(statistics.median(ttfts[(c, 1)]), statistics.median(ttfts[(c, 8)]))
    print(f"goals ({c} client): 8 clients {ratio:.2f}x 1 client's tokens/s (rounds {min(ratios):.2f}-{max(ratios):.2f}x; "
          f"goal >= 3x: {'met' if ratio >= 3 else 'NOT met'}); first token median at most {worst:.1f} ms "
          f"(goal < 100 ms: {'met' if worst < 100 else 'NOT met'})")
