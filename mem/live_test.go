package mem_test

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// TestLive: Live agrees with Check on every non-zero handle (live while a
// reference is held, stale once the item is freed and after it is
// allocated again) and is false for the zero Buf, in both kinds of pool.
func TestLive(t *testing.T) {
	if (mem.Buf{}).Live() {
		t.Fatal("the zero Buf is live")
	}
	for _, conc := range []bool{false, true} {
		p := memtest.NewPool(t, mem.PoolConfig{Name: "live", Concurrent: conc})
		b := mustAlloc(t, p, 256)
		agree := func(what string, h mem.Buf, want bool) {
			t.Helper()
			if got := h.Live(); got != want || got != (h.Check() == nil) {
				t.Errorf("concurrent=%v %s: Live %v, Check %v, want live=%v", conc, what, got, h.Check(), want)
			}
		}
		agree("new", b, true)
		c := b.Clone()
		release(t, b)
		agree("released clone's original", b, true) // the item is still held by c
		agree("clone", c.Slice(3, 10), true)
		release(t, c)
		agree("freed", b, false)
		d := mustAlloc(t, p, 256) // may reuse the item: a new generation
		agree("freed, item allocated again", b, false)
		agree("new allocation", d, true)
		release(t, d)
	}
}

// TestLiveAllocs: Live allocates nothing.
func TestLiveAllocs(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "live"})
	b := mustAlloc(t, p, 64)
	defer release(t, b)
	if a := testing.AllocsPerRun(100, func() { _ = b.Live() }); a != 0 {
		t.Fatalf("Live allocates %v", a)
	}
}

// Live is Check's test without the error: a holder that keeps its own
// reference next to the application's (as a datapath keeps one on a
// received packet it lends out) can ask cheaply whether it still holds a
// live reference and whether it is now the only one.
func ExampleBuf_Live() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	lent, _ := p.AllocCopy([]byte("packet"))
	ours := lent.Clone()
	fmt.Println("held by the application:", ours.Live() && ours.Refs() > 1)
	lent.Release()
	fmt.Println("held by the application:", ours.Live() && ours.Refs() > 1)
	ours.Release()
	fmt.Println("live:", ours.Live(), "in use:", p.InUse())
	// Output:
	// held by the application: true
	// held by the application: false
	// live: false in use: 0
}
