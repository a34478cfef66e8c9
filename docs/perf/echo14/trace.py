# Analyses the traces of docs/perf/echo14/trace.patch: python3 trace.py DIR/raw.trace DIR/cornflakes-hybrid.trace
import sys, bisect, statistics as st
def load(fn):
    S=[];C=[]
    for l in open(fn):
        side,k,n,a,b=l.split(); e=(k,int(n),int(a),int(b))
        (S if side=='S' else C).append(e)
    return S,C
def q(xs,p): 
    xs=sorted(xs); return xs[min(len(xs)-1,int(p*len(xs)))] if xs else float('nan')
for fn in sys.argv[1:]:
    S,C=load(fn)
    recv=[];serve=[];idle=[];ns=[];sF=[]
    prevF=None
    for i in range(len(S)-1):
        if S[i][0]=='R' and S[i+1][0]=='F':
            r,f=S[i],S[i+1]
            recv.append(r[3]-r[2]); serve.append(f[3]-r[3]); ns.append(r[1]); sF.append(f[3])
            if prevF is not None: idle.append(r[2]-prevF)
            prevF=f[3]
    cR=[e for e in C if e[0]=='R']; cF=[e for e in C if e[0]=='F']
    cRb=[e[3] for e in cR]; cFb=[e[3] for e in cF]
    # client handling: from its receive end to its next flush
    chand=[]
    for e in cR:
        j=bisect.bisect_left(cFb,e[3])
        if j<len(cFb): chand.append(cFb[j]-e[3])
    # handoff server publish -> client receive end
    h1=[]
    for t in sF:
        j=bisect.bisect_left(cRb,t)
        if j<len(cRb): h1.append(cRb[j]-t)
    # client publish -> server receive end
    sRb=[e[3] for e in S if e[0]=='R']
    h2=[]
    for t in cFb:
        j=bisect.bisect_left(sRb,t)
        if j<len(sRb): h2.append(sRb[j]-t)
    span=(S[-1][3]-S[0][2]) if S else 0
    reqs=sum(ns)
    print(fn, "batches", len(ns), "mean n %.1f"%(reqs/max(1,len(ns))), "span %.1f ms"%(span/1e6), "rps %.0f"%(reqs/(span/1e9)))
    for name,xs in [("srv recv",recv),("srv serve",serve),("srv idle",idle),("cli handle",chand),("srv pub->cli recv",h1),("cli pub->srv recv",h2)]:
        print("  %-20s p10 %7.0f p50 %7.0f p90 %7.0f ns  sum %5.1f%% of span"%(name,q(xs,.1),q(xs,.5),q(xs,.9),100*sum(xs)/span if span else 0))
    print("  client batch n: p50 %d"%q([e[1] for e in cR],.5), " srv n p10/p50", q(ns,.1), q(ns,.5))
