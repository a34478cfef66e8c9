package kv

// DatapathShm is shared memory between processes on one host
// (datapath/shm): a rendezvous over a Unix domain socket, descriptor rings
// in shared memory, and values sent zero-copy from the store's pool, which
// lives in a shared space the client maps read-only.
const DatapathShm = "shm"
