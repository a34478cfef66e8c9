package codec

import (
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
)

// The Tree5 walks of the Cornflakes generated types (internal/benchschema/cf), shared by the
// cornflakes adapters of microbench and echo so that both build and read the tree the same way
// as the baselines above do (leaves in depth-first, left-to-right order). Lists and single
// buffers need no helper: their generated accessors are the whole job.

// CFBuildTree initializes every node of t and sets its leaves from vals, in depth-first order.
// SetMessage applies the arena's hybrid rule per leaf (copied below its threshold, zero-copy
// from registered memory at or above it). It returns an error wrapping ErrCount unless
// len(vals) == TreeLeaves.
func CFBuildTree(t *cf.Tree5, vals [][]byte) error {
	if err := CheckCount(KindTree, len(vals)); err != nil {
		return err
	}
	k := 0
	for _, t4 := range [2]*cf.Tree4{t.InitLeft(), t.InitRight()} {
		for _, t3 := range [2]*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range [2]*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range [2]*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					t1.InitLeft().SetMessage(vals[k])
					t1.InitRight().SetMessage(vals[k+1])
					k += 2
				}
			}
		}
	}
	return nil
}

// CFTreeValues appends the leaf values of a decoded t to dst (depth-first, left to right) and
// returns it; absent subtrees are skipped, so a partial tree has fewer than TreeLeaves values
// (check with CheckCount). The values alias what t was decoded from (see the generated
// GetMessage); errors are the lazy decoding's errors of the nested messages.
func CFTreeValues(t *cf.Tree5, dst [][]byte) ([][]byte, error) {
	l5, err := t.GetLeft()
	if err != nil {
		return dst, err
	}
	r5, err := t.GetRight()
	if err != nil {
		return dst, err
	}
	for _, t4 := range [2]*cf.Tree4{l5, r5} {
		if t4 == nil {
			continue
		}
		l4, err := t4.GetLeft()
		if err != nil {
			return dst, err
		}
		r4, err := t4.GetRight()
		if err != nil {
			return dst, err
		}
		for _, t3 := range [2]*cf.Tree3{l4, r4} {
			if t3 == nil {
				continue
			}
			l3, err := t3.GetLeft()
			if err != nil {
				return dst, err
			}
			r3, err := t3.GetRight()
			if err != nil {
				return dst, err
			}
			for _, t2 := range [2]*cf.Tree2{l3, r3} {
				if t2 == nil {
					continue
				}
				l2, err := t2.GetLeft()
				if err != nil {
					return dst, err
				}
				r2, err := t2.GetRight()
				if err != nil {
					return dst, err
				}
				for _, t1 := range [2]*cf.Tree1{l2, r2} {
					if t1 == nil {
						continue
					}
					l1, err := t1.GetLeft()
					if err != nil {
						return dst, err
					}
					r1, err := t1.GetRight()
					if err != nil {
						return dst, err
					}
					for _, leaf := range [2]*cf.SingleBuffer{l1, r1} {
						if leaf != nil {
							dst = append(dst, leaf.GetMessage())
						}
					}
				}
			}
		}
	}
	return dst, nil
}
