package driver_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath/driver"
)

func TestOptionsOf(t *testing.T) {
	type opts struct{ N int }
	for _, tc := range []struct {
		v    any
		want opts
		ok   bool
	}{
		{nil, opts{}, true},
		{opts{N: 1}, opts{N: 1}, true},
		{&opts{N: 2}, opts{N: 2}, true},
		{(*opts)(nil), opts{}, true},
		{"other", opts{}, false},
	} {
		got, ok := driver.OptionsOf[opts](tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("OptionsOf(%#v) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
