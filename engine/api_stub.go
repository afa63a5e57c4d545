package engine

// Level is one price level of depth.
type Level struct {
	Price int64
	Qty   int64
	Count int64
}

// Engine is a matching engine: many instruments, each with its own book.
type Engine struct{}

// New returns an empty engine.
func New() *Engine { return &Engine{} }

// Apply processes one command and returns its events, valid until the next call.
func (e *Engine) Apply(c *Command) []Event { return nil }

// StateHash returns the deterministic hash of the whole state.
func (e *Engine) StateHash() uint64 { return 0 }

// SnapshotTo streams the state to s.
func (e *Engine) SnapshotTo(s Sink) error { return nil }

// Restorer returns a sink that rebuilds e, which must be empty.
func (e *Engine) Restorer() *Restorer { return &Restorer{} }

// Restorer rebuilds an engine from a record stream.
type Restorer struct{ Hasher }

// Err returns the first error the restorer met, or an error if the stream has not ended.
func (r *Restorer) Err() error { return nil }

// Clone returns a frozen copy-on-write view.
func (e *Engine) Clone() *Frozen { return &Frozen{} }

// Check verifies the engine's internal structure.
func (e *Engine) Check() error { return nil }

// Depth appends the top n levels of one side to dst.
func (e *Engine) Depth(instrument uint32, side Side, n int, dst []Level) []Level { return dst }

// Frozen is a read-only view.
type Frozen struct{}

// SnapshotTo streams the frozen state to s.
func (f *Frozen) SnapshotTo(s Sink) error { return nil }

// StateHash of the frozen state.
func (f *Frozen) StateHash() uint64 { return 0 }

// Partitions cuts the resting orders into at most n ordered partitions.
func (f *Frozen) Partitions(n int) []Partition { return nil }

// Partition is one ordered slice of the resting-order stream.
type Partition struct{}

// Emit streams the partition's orders to s.
func (p Partition) Emit(s RestingSink) (count, hashSum uint64, err error) { return 0, 0, nil }
