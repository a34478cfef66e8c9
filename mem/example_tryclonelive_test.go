package mem_test

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TryCloneLive takes a reference on entries that are still live, and
// SameItem lets a holder share one reference among handles on one item
// (as a datapath does for adjacent values of one received buffer). When
// TryCloneLive declines, Check tells a stale handle apart from a case
// that only needs the full Clone.
func ExampleBuf_TryCloneLive() {
	p, err := mem.NewPool(mem.PoolConfig{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, _ := p.AllocCopy([]byte("key=value"))
	entries := []mem.Buf{b.Slice(0, 3), b.Slice(4, 5)}
	var refs []mem.Buf // one per run of entries of one item
	for _, e := range entries {
		if len(refs) > 0 && refs[len(refs)-1].SameItem(e) {
			continue // live while that reference is held
		}
		r := e
		if !r.TryCloneLive() {
			if err := r.Check(); err != nil {
				panic(err) // a released entry
			}
			r = r.Clone()
		}
		refs = append(refs, r)
	}
	fmt.Println("references taken:", len(refs), "refs:", b.Refs())
	_ = mem.ReleaseAll(refs)
	b.Release()
	fmt.Println("in use:", p.InUse())
	// Output:
	// references taken: 1 refs: 2
	// in use: 0
}
