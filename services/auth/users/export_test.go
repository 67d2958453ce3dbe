package users

// HoldSlot takes one of the hasher's slots, as a running hash does, until release is called; tests use
// it to fill the pool without racing a real hash's duration.
func (h *Hasher) HoldSlot() (release func()) {
	buf := <-h.slots
	return func() { h.release(buf) }
}
