package snapshot_test

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/snapshot"
)

// Take a snapshot of an engine into an Aeron log, then restore a new engine
// from the log: the restore checks the markers, the counts, the stream
// checksum and the state hash, and hands out the engine only when all agree.
func Example() {
	e := engine.New()
	for i, c := range []engine.Command{
		{Kind: engine.CmdDefineInstrument, Instrument: 7, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Instrument: 7, OrderID: 1, Account: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 101, Qty: 5},
		{Kind: engine.CmdNewOrder, Instrument: 7, OrderID: 2, Account: 2, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 99, Qty: 3},
	} {
		c.Source, c.Seq = 1, uint64(i+1)
		e.Apply(&c)
	}

	// The log: one term is plenty for this book. A node writes into its
	// snapshot recording's publication instead.
	log, err := logbuf.New(64*1024, 1408, 0, 1, 106)
	if err != nil {
		panic(err)
	}
	pub := log.Publication()
	img, other := log.Image(), log.Image() // two readers from position 0
	p, err := snapshot.NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error {
		return errors.New("back-pressured: nothing drains this log")
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	marker := snapshot.Marker{TypeID: snapshot.ServiceSnapshotTypeID, LogPosition: 4096,
		TimeUnit: acs.ClusterTimeUnitNANOS, AppVersion: 1}
	if err := p.Take(e, marker); err != nil {
		panic(err)
	}

	restored, m, err := snapshot.Load(stream.NewImageSource(img),
		snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println("log position", m.LogPosition, "orders", restored.Orders(), "same state", restored.StateHash() == e.StateHash())

	// A wrong application version is refused, never loaded.
	_, _, err = snapshot.Load(stream.NewImageSource(other),
		snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: 2})
	fmt.Println(err)
	// Output:
	// log position 4096 orders 2 same state true
	// snapshot: load: fragment 0 (position 96): SnapshotMarker BEGIN: app version 1, want 2
}
