package enginesvc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/snapshot"
)

// TestParallelOptionsChecked: the service's parallel-encoding options are
// checked by snapshot.Parallel when the node starts it, before any
// snapshot, with the error naming the field.
func TestParallelOptionsChecked(t *testing.T) {
	for _, c := range []struct {
		opts enginesvc.Options
		want string
	}{
		{enginesvc.Options{Workers: -1}, "parallel workers"},
		{enginesvc.Options{Workers: 2, ParallelMin: -1}, "parallel minimum"},
		{enginesvc.Options{Workers: 2, PartitionOrders: -5}, "partition of -5 orders"},
	} {
		err := enginesvc.New(c.opts).OnStart(nil, nil)
		if !errors.Is(err, snapshot.ErrPublish) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: OnStart = %v, want an error naming %q", c.opts, err, c.want)
		}
	}
}
