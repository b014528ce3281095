# Per-kernel time per step, untuned vs tuned traces (and the lead's idle trace), for the tuned kernels.
import json,sys
files=sys.argv[1:]
ds=[json.load(open(f)) for f in files]
names=['mhc_post.bwd','mhc_pre','mhc_post','mhc_head','cross_entropy','attn.sparse_attention','attn.sparse_attention_backward','lm_head','lm_head.bwd','moe.experts.w1w3.bwd','attn.wo_backward','moe.shared.bwd','mtp.proj.bwd']
def per_step(d,n):
    for k in d['kernels']:
        if k['name']==n: return k['total_us']/d['steps']/1e3 if isinstance(d['steps'],(int,float)) else None
    return float('nan')
print('steps', [d['steps'] for d in ds])
print('| kernel | ' + ' | '.join(files) + ' |')
for n in names:
    print('| %s | %s |' % (n, ' | '.join('%.1f ms (%.1f%%)' % (per_step(d,n), 100*next((k['share'] for k in d['kernels'] if k['name']==n),0)) for d in ds)))
for d,f in zip(ds,files):
    print(f, 'window_us/step %.1f ms' % (d['window_us']/d['steps']/1e3), 'busy %.1f' % (d['busy_us']/d['steps']/1e3), 'categories', {k: round(v/d['steps']/1e3,1) for k,v in d['category_us'].items()})
