package wireimpl

// Version is the version of the contract between generated code and this
// runtime. Generated code is made for exactly one Version, which it names
// in two constants (see EnforceVersion); the generator built from this
// module emits the Version of this runtime. It is incremented when the
// runtime stops supporting code of an older generator (and MinVersion is
// raised to it) or when the generator starts emitting code that needs a
// newer runtime.
const Version = 1

// MinVersion is the oldest generated-code version this runtime supports.
const MinVersion = 1

// EnforceVersion makes a mismatch between generated code and the runtime a
// compile error. Code generated for version N contains
//
//	const (
//		_ = wireimpl.EnforceVersion(N - wireimpl.MinVersion)
//		_ = wireimpl.EnforceVersion(wireimpl.Version - N)
//	)
//
// The first fails to compile (a negative constant converted to an
// unsigned type) when the code is older than this runtime supports, the
// second when it was generated for a newer runtime than this one.
type EnforceVersion uint

// The bounds themselves are consistent.
const _ = EnforceVersion(Version - MinVersion)
