// Package errs builds the per-package sentinel errors that wrap the shared
// identities of package cornflakes.
package errs

// New returns a sentinel error whose message is msg and which matches
// identity with errors.Is (it unwraps to identity). Each result is a
// distinct value, so a package's sentinel also matches only itself.
func New(msg string, identity error) error {
	return &sentinel{msg: msg, identity: identity}
}

type sentinel struct {
	msg      string
	identity error
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.identity }
