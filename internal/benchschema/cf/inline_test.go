package cf_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// ListBuffers is a one-level message: its list holds up to
// wireimpl.InlineItems elements in the message itself, and New does not
// zero them (TryNewRaw). These tests build, decode and reuse such messages
// across Resets, so that every message of a later batch lies in memory
// that held an earlier one's elements, and require the bytes of the
// Encoder path, the decoded values and empty new messages.
func TestInlineListReuse(t *testing.T) {
	pool := memtest.NewPool(t)
	zc := memtest.Alloc(t, pool, bytes.Repeat([]byte{0x5a}, 1500))
	defer memtest.Release(t, zc)
	a := wire.NewArena()
	defer resetArena(t, a)
	for batch := range 4 {
		for n := range 5 {
			name := fmt.Sprintf("batch %d, %d elements", batch, n)
			fresh := cf.NewListBuffers(a)
			if fresh.HasMessages() {
				t.Fatalf("%s: a new message has elements", name)
			}
			if l, err := fresh.GetMessages(); err != nil || l.Len() != 0 {
				t.Fatalf("%s: new message's list: %v, %v", name, l, err)
			}
			checkDirect(t, fresh)

			x := cf.NewListBuffers(a)
			l := x.InitMessages(min(n, 2))
			var want [][]byte
			for i := range n {
				if i%2 == 1 {
					l.AppendBuf(zc)
					want = append(want, zc.Bytes())
				} else {
					v := []byte(fmt.Sprintf("value %d of batch %d", i, batch))
					l.Append(v)
					want = append(want, v)
				}
			}
			checkDirect(t, x)
			var sga wire.SGA
			if err := x.SerializeSGA(&sga); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			msg := memtest.Alloc(t, pool, sgaBytes(&sga))
			y, err := cf.DecodeListBuffers(a, msg)
			memtest.Release(t, msg) // the arena holds its own reference until Reset
			if err != nil {
				t.Fatalf("%s: decode: %v", name, err)
			}
			got, err := y.GetMessages()
			if err != nil || got.Len() != n {
				t.Fatalf("%s: decoded %d elements (%v), want %d", name, got.Len(), err, n)
			}
			for i := range n {
				if !bytes.Equal(got.At(i), want[i]) {
					t.Fatalf("%s: element %d = %q, want %q", name, i, got.At(i), want[i])
				}
			}
			x.ClearMessages()
			if x.HasMessages() {
				t.Fatalf("%s: cleared list has elements", name)
			}
			checkDirect(t, x)
		}
		resetArena(t, a)
	}
}
