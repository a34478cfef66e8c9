package memtest_test

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, so the helpers' own failure paths can be tested.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper()          {}
func (r *recorder) Name() string     { return "recorder" }
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...) }
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestNewPoolReportsLeaks(t *testing.T) {
	rec := &recorder{TB: t}
	p := memtest.NewPool(rec)
	leaked := memtest.Alloc(rec, p, []byte("leak"))
	memtest.AssertInUse(rec, p, 1)
	rec.runCleanups()
	if len(rec.errors) == 0 {
		t.Fatal("a leaked reference was not reported")
	}
	t.Logf("reported: %q", rec.errors)
	// Clean up for real.
	if err := leaked.Release(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNewPoolCleanWhenBalanced(t *testing.T) {
	rec := &recorder{TB: t}
	p := memtest.NewPool(rec, mem.PoolConfig{Name: "balanced"})
	b := memtest.Alloc(rec, p, []byte("ok"))
	memtest.AssertInUse(rec, p, 1)
	memtest.Release(rec, b)
	memtest.Release(rec, b) // double release is reported
	if len(rec.errors) != 1 {
		t.Fatalf("errors = %q, want one (the double release)", rec.errors)
	}
	rec.errors = nil
	rec.runCleanups()
	if len(rec.errors) != 0 {
		t.Fatalf("balanced pool reported %q", rec.errors)
	}
	if !p.Stats().Closed {
		t.Fatal("cleanup did not close the pool")
	}
}
