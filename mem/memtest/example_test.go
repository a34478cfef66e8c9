package memtest_test

import (
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// The examples run a test body with a stand-in for *testing.T that prints
// what the testing package would report, so that their output shows the
// helpers' messages. A real test passes its own t.
type exampleT struct {
	testing.TB // the methods the helpers do not call (nil here)
	name       string
	failed     bool
	cleanups   []func()
}

type fatal struct{}

func (t *exampleT) Helper()          {}
func (t *exampleT) Name() string     { return t.name }
func (t *exampleT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, args ...any) {
	if !t.failed {
		fmt.Println("--- FAIL:", t.name)
		t.failed = true
	}
	fmt.Printf("    "+format+"\n", args...)
}
func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatal{}) // stops the body, as t.FailNow does
}

// runTest runs body as the testing package runs a test: the body, then its
// cleanups, last registered first, then the verdict.
func runTest(name string, body func(t testing.TB)) {
	t := &exampleT{name: name}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (fatal{}) {
				panic(r)
			}
		}()
		body(t)
	}()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	if !t.failed {
		fmt.Println("--- PASS:", name)
	}
}

// A test makes its pool with NewPool, checks the accounting on the way with
// AssertInUse, and needs nothing else: NewPool's cleanup fails the test if
// a reference is still held at the end, and closes the pool.
func ExampleNewPool() {
	runTest("TestCachePut", func(t testing.TB) {
		p := memtest.NewPool(t, mem.PoolConfig{Name: "cache"})
		v := memtest.Alloc(t, p, []byte("value"))
		memtest.AssertInUse(t, p, 1)
		memtest.Release(t, v)
		memtest.AssertInUse(t, p, 0)
	})
	// Output:
	// --- PASS: TestCachePut
}

// A reference the code under test forgets to release fails the test when it
// ends. The failing pool is left open (closing it would unmap memory that is
// still referenced); here the example then cleans up by hand.
func ExampleNewPool_leak() {
	var (
		p      *mem.Pool
		leaked mem.Buf
	)
	runTest("TestCacheEvict", func(t testing.TB) {
		p = memtest.NewPool(t, mem.PoolConfig{Name: "cache"})
		v := memtest.Alloc(t, p, []byte("value"))
		leaked = v.Clone() // e.g. an index entry that eviction forgot
		memtest.Release(t, v)
	})
	fmt.Println(leaked.Release(), p.Close())
	// Output:
	// --- FAIL: TestCacheEvict
	//     memtest: pool "cache": 1 item(s) still in use at Close (leaked references)
	//     memtest:   class 64 B: 1 in use
	// <nil> <nil>
}

// AssertInUse counts items, not references: cloning a buffer does not
// change it, and only the last Release of an item brings it down.
func ExampleAssertInUse() {
	runTest("TestClone", func(t testing.TB) {
		p := memtest.NewPool(t)
		a := memtest.Alloc(t, p, []byte("a"))
		b := memtest.Alloc(t, p, []byte("b"))
		a2 := a.Clone()
		memtest.AssertInUse(t, p, 2)
		memtest.Release(t, a)
		memtest.AssertInUse(t, p, 2) // a2 still holds a's item
		memtest.Release(t, a2)
		memtest.Release(t, b)
		memtest.AssertInUse(t, p, 1) // wrong on purpose, to show the report
	})
	// Output:
	// --- FAIL: TestClone
	//     memtest: pool "TestClone": InUse() = 0, want 1
}

// Release fails the test (without stopping it) when a release is wrong,
// here a double release.
func ExampleRelease() {
	runTest("TestDoubleRelease", func(t testing.TB) {
		p := memtest.NewPool(t, mem.PoolConfig{Name: "values"})
		b := memtest.Alloc(t, p, []byte("once"))
		memtest.Release(t, b)
		memtest.Release(t, b)
	})
	// Output:
	// --- FAIL: TestDoubleRelease
	//     memtest: Release: mem: double release
}

// Close checks and closes a pool at a point the test chooses, for example
// one the test made itself to hand to the component under test, once that
// component has shut down. With items in use it reports them and leaves the
// pool open.
func ExampleClose() {
	runTest("TestShutdownReturnsBuffers", func(t testing.TB) {
		p, err := mem.NewPool(mem.PoolConfig{Name: "rx"})
		if err != nil {
			t.Fatalf("NewPool: %v", err)
		}
		held := memtest.Alloc(t, p, make([]byte, 1500)) // what the component kept
		memtest.Close(t, p)                             // reports it; p stays open
		memtest.Release(t, held)
		memtest.Close(t, p) // balanced: closes p
		fmt.Println("closed:", p.Stats().Closed)
	})
	// Output:
	// --- FAIL: TestShutdownReturnsBuffers
	//     memtest: pool "rx": 1 item(s) still in use at Close (leaked references)
	//     memtest:   class 2048 B: 1 in use
	// closed: true
}
