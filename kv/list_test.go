package kv

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/workload"
)

func rangeStrings(t *testing.T, s *Store, key string, start, stop int) []string {
	t.Helper()
	var res Result
	defer res.Release()
	if err := s.Range([]byte(key), start, stop, &res, 1<<20); err != nil {
		t.Fatalf("Range(%s, %d, %d): %v", key, start, stop, err)
	}
	out := []string{}
	for _, b := range res.Vals {
		out = append(out, string(b.Bytes()))
	}
	return out
}

func vals(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// TestPushRange checks Push at both ends, ListLen and Range's index rules
// against the answers Redis gives for RPUSH/LPUSH/LLEN/LRANGE, and that
// every reference returns to the pool.
func TestPushRange(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "list", Concurrent: true})
	s := NewStore(p, 4)
	defer s.Clear()
	k := []byte("l")
	for _, step := range []struct {
		vals  []string
		front bool
		n     int
	}{{[]string{"b", "c"}, false, 2}, {[]string{"a"}, true, 3}, {[]string{"y", "x"}, true, 5}, {[]string{"d"}, false, 6}, {nil, false, 6}} {
		n, err := s.Push(k, vals(step.vals...), step.front)
		if err != nil || n != step.n {
			t.Fatalf("Push(%v, front=%v) = %d, %v; want %d", step.vals, step.front, n, err, step.n)
		}
	}
	if n := s.ListLen(k); n != 6 {
		t.Fatalf("ListLen = %d", n)
	}
	if n := s.ListLen([]byte("absent")); n != 0 {
		t.Fatalf("ListLen(absent) = %d", n)
	}
	for _, c := range []struct {
		start, stop int
		want        string
	}{
		{0, -1, "[x y a b c d]"}, {0, 0, "[x]"}, {1, 2, "[y a]"}, {-2, -1, "[c d]"},
		{-100, 1, "[x y]"}, {4, 100, "[c d]"}, {3, 2, "[]"}, {6, 10, "[]"}, {-1, -2, "[]"},
	} {
		if got := fmt.Sprint(rangeStrings(t, s, "l", c.start, c.stop)); got != c.want {
			t.Errorf("Range(%d, %d) = %s, want %s", c.start, c.stop, got, c.want)
		}
	}
	if got := fmt.Sprint(rangeStrings(t, s, "absent", 0, -1)); got != "[]" {
		t.Errorf("Range(absent) = %s", got)
	}
	memtest.AssertInUse(t, p, 6)
	// Push to an absent key creates it; an empty push to an absent key does not.
	if n, err := s.Push([]byte("new"), nil, true); n != 0 || err != nil || s.Len() != 1 {
		t.Fatalf("empty push: %d %v, %d keys", n, err, s.Len())
	}
	var res Result
	if err := s.Range(k, 0, -1, &res, 2); err == nil || res.Status != workload.StatusError || len(res.Vals) != 0 {
		t.Fatalf("Range beyond maxResp: %v %v %d", err, res.Status, len(res.Vals))
	}
	// Limits leave the list unchanged.
	var le *limitError
	if _, err := s.Push(k, vals(string(make([]byte, MaxValueSize+1))), false); !errors.As(err, &le) {
		t.Fatalf("oversized push: %v", err)
	}
	if _, err := s.Push(make([]byte, MaxKeySize+1), vals("v"), false); !errors.As(err, &le) {
		t.Fatalf("oversized key: %v", err)
	}
	if err := s.Range(make([]byte, MaxKeySize+1), 0, 1, &res, 1<<20); err == nil {
		t.Fatalf("Range with an oversized key succeeded")
	}
	if n := s.ListLen(k); n != 6 {
		t.Fatalf("ListLen after refused pushes = %d", n)
	}
	memtest.AssertInUse(t, p, 6)
}

// TestPushMaxListLen: a push past MaxListLen is refused and frees what it
// allocated.
func TestPushMaxListLen(t *testing.T) {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "list", Concurrent: true})
	s := NewStore(p, 1)
	defer s.Clear()
	k := []byte("l")
	batch := make([][]byte, MaxKeys)
	for i := range batch {
		batch[i] = []byte("v")
	}
	for s.ListLen(k) < MaxListLen {
		if _, err := s.Push(k, batch, true); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Push(k, vals("x"), false); err == nil || n != MaxListLen {
		t.Fatalf("push past MaxListLen: %d, %v", n, err)
	}
	memtest.AssertInUse(t, p, MaxListLen)
}
