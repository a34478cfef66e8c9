package freelist

import (
	"fmt"
	"testing"
)

func TestReuseLastFreedFirst(t *testing.T) {
	var l List[string]
	a, b, c := l.Add("a"), l.Add("b"), l.Add("c")
	if a != 0 || b != 1 || c != 2 || l.Len() != 3 {
		t.Fatalf("indexes %d %d %d, len %d", a, b, c, l.Len())
	}
	if v := l.Take(a); v != "a" || *l.At(a) != "" {
		t.Fatalf("take %q, slot now %q", v, *l.At(a))
	}
	l.Take(c)
	if i := l.Add("d"); i != c {
		t.Fatalf("add after freeing %d and %d reused %d", a, c, i)
	}
	if i := l.Add("e"); i != a || l.Len() != 3 {
		t.Fatalf("second reuse %d, len %d", i, l.Len())
	}
	*l.At(b) = "B"
	for i, want := range []string{"e", "B", "d"} {
		if got := *l.At(int32(i)); got != want {
			t.Errorf("At(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	var l List[[4]int64]
	for i := 0; i < 8; i++ {
		l.Add([4]int64{})
	}
	for i := int32(0); i < 8; i++ {
		l.Take(i)
	}
	if n := testing.AllocsPerRun(100, func() { l.Take(l.Add([4]int64{1})) }); n != 0 {
		t.Fatalf("%v allocations per add and take", n)
	}
}

func ExampleList() {
	var conts List[func(string)]
	tag := conts.Add(func(s string) { fmt.Println("answer:", s) })
	// ... the tag travels with a request and comes back with its answer:
	fn := conts.Take(tag)
	fn("42")
	fmt.Println(conts.Add(nil) == tag) // the freed index is reused
	// Output:
	// answer: 42
	// true
}
