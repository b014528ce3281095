# Per-kernel time per step, untuned (U) vs tuned (T) traced runs: medians over rounds, the
# per-round paired differences, sorted by the median difference. usage: anat_ab.py DIR TAG...
import json, sys, glob, os, statistics as st
d = sys.argv[1]; tags = sys.argv[2:]
runs = {'U': [], 'T': []}
for tag in tags:
    for f in sorted(glob.glob(f'{d}/{tag}_*_r*.anat.json')):
        b = os.path.basename(f); _, v, r = b.split('.')[0].split('_')
        a = json.load(open(f)); s = json.load(open(f.replace('.anat.json', '.json')))
        runs[v].append((tag + r, a, s))
def per_step(a):
    return {k['name']: k['total_us'] / a['steps'] / 1e3 for k in a['kernels']}
U = {r: (per_step(a), a, s) for r, a, s in runs['U']}; T = {r: (per_step(a), a, s) for r, a, s in runs['T']}
rounds = sorted(set(U) & set(T))
print('rounds', rounds)
print('step median s   U', [round(U[r][2]['median_step_s'], 3) for r in rounds])
print('                T', [round(T[r][2]['median_step_s'], 3) for r in rounds])
print('U/T per round   ', [round(U[r][2]['median_step_s'] / T[r][2]['median_step_s'], 3) for r in rounds])
print('window/step ms  U', [round(U[r][1]['window_us'] / U[r][1]['steps'] / 1e3, 1) for r in rounds])
print('                T', [round(T[r][1]['window_us'] / T[r][1]['steps'] / 1e3, 1) for r in rounds])
print('busy/step ms    U', [round(U[r][1]['busy_us'] / U[r][1]['steps'] / 1e3, 1) for r in rounds])
print('                T', [round(T[r][1]['busy_us'] / T[r][1]['steps'] / 1e3, 1) for r in rounds])
names = set()
for r in rounds: names |= set(U[r][0]) | set(T[r][0])
rows = []
for n in names:
    u = [U[r][0].get(n, 0) for r in rounds]; t = [T[r][0].get(n, 0) for r in rounds]
    diffs = [a - b for a, b in zip(u, t)]
    rows.append((st.median(diffs), n, st.median(u), st.median(t), diffs))
rows.sort(key=lambda x: -abs(x[0]))
tot = sum(x[0] for x in rows)
print(f'sum of per-kernel median diffs {tot:.1f} ms/step')
print('| kernel | U ms/step (median) | T ms/step | U - T median | U/T | per round U - T |')
print('|---|---|---|---|---|---|')
for md, n, u, t, diffs in rows[:int(os.environ.get('TOP', '30'))]:
    print(f'| {n} | {u:.1f} | {t:.1f} | {md:+.1f} | {u / t if t else float("nan"):.3f} | {" ".join(f"{x:+.1f}" for x in diffs)} |')
cat = lambda x: {k: v / x['steps'] / 1e3 for k, v in x['category_us'].items()}
print('categories median U - T:', {k: round(st.median([cat(U[r][1]).get(k, 0) - cat(T[r][1]).get(k, 0) for r in rounds]), 1) for k in cat(U[rounds[0]][1])})
