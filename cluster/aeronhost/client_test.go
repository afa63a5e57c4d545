package aeronhost

import (
	"strings"
	"testing"

	aclient "github.com/lirm/aeron-go/cluster/client"
)

// TestNewClusterClientPanicIsError: a panic inside aeron-go's constructor
// (here, from a nil context) comes back as an error naming aeron-go.
func TestNewClusterClientPanicIsError(t *testing.T) {
	type listener struct{ aclient.EgressListener } // never called: the constructor fails first
	opts := aclient.NewOptions()
	opts.IngressChannel, opts.IngressEndpoints = "aeron:ipc", ""
	ac, err := NewClusterClient(nil, opts, listener{})
	if err == nil || ac != nil || !strings.HasPrefix(err.Error(), "aeron-go: ") {
		t.Fatalf("client %v, error %v; want no client and an aeron-go error", ac, err)
	}
}
