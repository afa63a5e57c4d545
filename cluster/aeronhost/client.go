package aeronhost

import (
	"fmt"

	"github.com/lirm/aeron-go/aeron"
	aclient "github.com/lirm/aeron-go/cluster/client"
)

// NewClusterClient is aeron-go's cluster client constructor
// (client.NewAeronCluster), which panics on some failures to connect, with
// its panics turned into errors: the client side of a cluster hosted with
// this package (`matchlog aeron-client`, `matchlog bench aeron`).
func NewClusterClient(ctx *aeron.Context, opts *aclient.Options, l aclient.EgressListener) (ac *aclient.AeronCluster, err error) {
	defer func() {
		if r := recover(); r != nil {
			ac, err = nil, fmt.Errorf("aeron-go: %v", r)
		}
	}()
	return aclient.NewAeronCluster(ctx, opts, l)
}
