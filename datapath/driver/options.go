package driver

// OptionsOf returns the kind-specific options T held in
// datapath.Config.Options, given as T or *T; nil (or a nil *T) is T's zero
// value. ok is false for any other type, which the kind reports as its
// configuration error.
func OptionsOf[T any](v any) (o T, ok bool) {
	switch x := v.(type) {
	case nil:
		return o, true
	case T:
		return x, true
	case *T:
		if x != nil {
			o = *x
		}
		return o, true
	}
	return o, false
}
