package cuda

// SetSkipSync makes the stream-ordered mode's synchronizations no-ops
// (Synchronize, the host ops' and the frees' waits), so that a test shows
// what reading without them gives.
func SetSkipSync(b *Backend, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.skipSync = on
}
