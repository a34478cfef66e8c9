package shm_test

// runChild runs the helper process named by $SHM_TEST_CHILD and reports
// whether it did (TestMain then exits).
func runChild() bool { return false }
