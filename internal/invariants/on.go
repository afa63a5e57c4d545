//go:build invariants

package invariants

// Enabled is true when the invariants build tag is set.
const Enabled = true
