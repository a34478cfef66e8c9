# Summarises the per-batch lines ECHO_CPUTRACE writes with scratch.patch:
# "n cpu_ns wall_ns doorbell_writes socket_polls" per timed batch.
# python3 cputrace.py raw.txt cornflakes-hybrid.txt
import statistics as st
import sys

for path in sys.argv[1:]:
    rows = [tuple(map(int, l.split())) for l in open(path) if l.strip()]
    n = sum(r[0] for r in rows)
    cpu = sum(r[1] for r in rows)
    med = st.median([r[1] for r in rows])
    ratio = [r[1] / r[2] for r in rows]
    big = [r for r in rows if r[1] > 3 * med]
    print(path, "batches", len(rows), "mean n %.1f" % (n / len(rows)))
    print("  cpu/req: mean %.0f, median %.0f" % (cpu / n, st.median([r[1] / r[0] for r in rows])))
    print("  wall/req median %.0f; cpu/wall per batch median %.2f, max %.2f" % (
        st.median([r[2] / r[0] for r in rows]), st.median(ratio), max(ratio)))
    print("  batches with a doorbell write %d, with a socket poll %d" % (
        sum(1 for r in rows if r[3]), sum(1 for r in rows if r[4])))
    print("  batches > 3x the median: %d, %.0f%% of the CPU" % (len(big), 100 * sum(r[1] for r in big) / cpu))
