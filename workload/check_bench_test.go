package workload

import "testing"

// BenchmarkStreamCheck is the load generator's per-response work of the
// benchmark's four workloads: draw a request, answer it from a MemStore
// (outside the check), and check the answer with CheckSpot (what the
// generator does for all but one response in VerifyEvery).
func BenchmarkStreamCheck(b *testing.B) {
	for _, spec := range []string{"cdn:objects=10000", "twitter:keys=100000", "ycsb:records=100000,shape=2x2048", "google"} {
		b.Run(spec, func(b *testing.B) {
			w, err := Parse(spec)
			if err != nil {
				b.Fatal(err)
			}
			s := NewMemStore()
			var resp Response
			if err := w.Preload(func(r *Request) error { s.Apply(r, &resp); return nil }); err != nil {
				b.Fatal(err)
			}
			st := w.NewStream(0, 1, 1)
			m := w.Model()
			var req Request
			b.ResetTimer()
			for range b.N {
				st.Next(&req)
				s.Apply(&req, &resp)
				if err := m.CheckSpot(&req, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
