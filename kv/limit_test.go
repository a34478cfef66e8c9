package kv

import (
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestExecResponseLimit: a read whose values exceed maxResp fails with an
// error naming their size, holds no reference and leaves the store as it
// was.
func TestExecResponseLimit(t *testing.T) {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "limit"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(pool, 1)
	var res Result
	put := &Query{Op: workload.OpPutM, Keys: [][]byte{[]byte("a"), []byte("b")}, Vals: [][]byte{make([]byte, 300), make([]byte, 400)}}
	if err := s.Exec(put, &res, 1<<20); err != nil {
		t.Fatal(err)
	}
	get := &Query{Op: workload.OpGetM, Keys: [][]byte{[]byte("a"), []byte("b")}}
	err = s.Exec(get, &res, 500)
	if err == nil || !strings.Contains(err.Error(), "response of 700 bytes (limit 500)") {
		t.Fatalf("error %v, want one naming the 700-byte response", err)
	}
	if res.Status != workload.StatusError || len(res.Vals) != 0 || res.Bytes != 0 {
		t.Fatalf("result %v with %d values and %d bytes after the limit", res.Status, len(res.Vals), res.Bytes)
	}
	if err := s.Exec(get, &res, 1<<20); err != nil || len(res.Vals) != 2 {
		t.Fatalf("within the limit: %v, %d values", err, len(res.Vals))
	}
	res.Release()
	s.Clear()
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
}
